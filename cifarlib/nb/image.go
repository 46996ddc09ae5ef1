package nb

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	imagedraw "image/draw"
	"image/jpeg"
	"image/png"
	"math"
	"slices"
	"strings"

	"github.com/janpfeifer/gonb/gonbui/protocol"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Image is a picture for Show: one drawing as an SVG document and as a bitmap (a chart's a PNG,
// a picture of photographs' a JPEG), with a plain-text description. A notebook output carries
// all three (DisplayImage), and each viewer shows the richest it trusts: JupyterLab shows the
// SVG in a trusted notebook (sharp at any zoom); an untrusted one (a notebook opened from a file
// or a clone, before File > Trust Notebook), GitHub and nbviewer show the bitmap, since
// JupyterLab renders SVG only when trusted; a terminal or a text-only viewer shows the text.
type Image struct {
	// SVG is the drawing as a self-contained SVG document.
	SVG string
	// PNG is the same drawing as a PNG (charts: lines and text in few colours), JPEG as a JPEG
	// (ImageGrid: a PNG of photographs is four times larger), of one pixel per CSS pixel, as
	// matplotlib draws a notebook's figures: a chart's PNG is 12-20 kB (paletted, see pngOf).
	// An Image has one of them, or neither (a live view's redraws, Live).
	PNG, JPEG []byte
	// Width and Height are the size it is shown at, in CSS pixels (the SVG's own size).
	Width, Height int
	// Text is the plain-text alternative: what the picture shows, and its caption.
	Text string
}

// mimeImageJPEG is JPEG's MIME type, which gonbui does not name (GoNB sends any []byte
// base64-encoded, as Jupyter wants an image).
const mimeImageJPEG protocol.MIMEType = "image/jpeg"

// cssDPI is the resolution CSS pixels are defined at.
const cssDPI = 96

// bundle returns img as a notebook output: its MIME data and metadata (the bitmap's display
// size, which JupyterLab and nbconvert honour).
func (img *Image) bundle() (data map[protocol.MIMEType]any, metadata map[string]any) {
	data = map[protocol.MIMEType]any{}
	if img.SVG != "" {
		data[protocol.MIMEImageSVG] = img.SVG
	}
	for _, b := range []struct {
		mime protocol.MIMEType
		data []byte
	}{{protocol.MIMEImagePNG, img.PNG}, {mimeImageJPEG, img.JPEG}} {
		if len(b.data) > 0 {
			data[b.mime] = b.data
			metadata = map[string]any{string(b.mime): map[string]any{"width": img.Width, "height": img.Height}}
		}
	}
	return data, metadata
}

// jpegQuality is the quality of an Image's JPEG: photographs of 32x32 pixels drawn 2.4 cm wide
// show no artefacts, the text of their titles a few.
const jpegQuality = 85

// renderImage draws paint on a canvas w wide and h high, twice: as SVG and as a PNG, or a JPEG
// when asJPEG.
func renderImage(w, h vg.Length, asJPEG bool, paint func(draw.Canvas)) (*Image, error) {
	svg, err := svgOf(w, h, paint)
	if err != nil {
		return nil, err
	}
	img := &Image{SVG: svg, Width: cssPixels(w), Height: cssPixels(h)}
	c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(cssDPI))
	paint(draw.New(c))
	if asJPEG {
		var b bytes.Buffer
		if err := jpeg.Encode(&b, c.Image(), &jpeg.Options{Quality: jpegQuality}); err != nil {
			return nil, err
		}
		img.JPEG = b.Bytes()
		return img, nil
	}
	if img.PNG, err = pngOf(c.Image()); err != nil {
		return nil, err
	}
	return img, nil
}

// cssPixels is l in CSS pixels, rounded.
func cssPixels(l vg.Length) int { return int(math.Round(l.Points() * cssDPI / vg.Inch.Points())) }

// svgOf draws paint as a self-contained SVG document w wide and h high, its text in
// Liberation Sans or the fonts that have its metrics (svgFontFallbacks).
func svgOf(w, h vg.Length, paint func(draw.Canvas)) (string, error) {
	c := vgsvg.New(w, h)
	paint(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", err
	}
	return strings.ReplaceAll(b.String(), svgFontFamily, svgFontFallbacks), nil
}

// pngOf encodes a drawing (vgimg's, on white, its text in gonum/plot's own Liberation fonts, so
// that it looks the same everywhere) as a PNG, paletted when that keeps it exact enough.
func pngOf(img image.Image) ([]byte, error) {
	var b bytes.Buffer
	if p, exact := paletted(img); exact >= minExact {
		img = p
	}
	if err := png.Encode(&b, img); err != nil { // best compression: 7% smaller, 10 times slower
		return nil, err
	}
	return b.Bytes(), nil
}

// minExact is the share of a drawing's pixels that must keep their exact colour in paletted
// for its PNG to be paletted: a chart's are over 98.5%, a grid of photographs' far fewer
// (those are stored in full colour).
const minExact = 0.95

// paletted returns img with at most 256 colours, which PNG stores in a byte per pixel, less
// than half the size of full colour: a chart's few flat colours and its most frequent
// anti-aliasing shades are kept exactly, and a rarer shade (an edge pixel where two curves
// cross) becomes the nearest kept colour. It also returns the share of pixels kept exactly.
// The standard library and gonum have no colour quantiser, and a general one (median cut,
// dithering) would blur the flat colours.
func paletted(img image.Image) (out *image.Paletted, exact float64) {
	rgba, ok := img.(*image.RGBA)
	if !ok {
		rgba = image.NewRGBA(img.Bounds())
		imagedraw.Draw(rgba, rgba.Bounds(), img, img.Bounds().Min, imagedraw.Src)
	}
	b := rgba.Bounds()
	pixel := func(x, y int) uint32 { // the colour at x, y as 0xRRGGBBAA
		i := rgba.PixOffset(x, y)
		return binary.BigEndian.Uint32(rgba.Pix[i : i+4])
	}
	counts := map[uint32]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ { // in runs of one colour: most of a chart is white
		run, prev := 0, pixel(b.Min.X, y)
		for x := b.Min.X; x < b.Max.X; x++ {
			if c := pixel(x, y); c != prev {
				counts[prev] += run
				run, prev = 0, c
			}
			run++
		}
		counts[prev] += run
	}
	colours := make([]uint32, 0, len(counts))
	for c := range counts {
		colours = append(colours, c)
	}
	slices.SortFunc(colours, func(a, b uint32) int { // most frequent first; ties in a fixed order
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	rgbaOf := func(c uint32) color.RGBA {
		return color.RGBA{R: uint8(c >> 24), G: uint8(c >> 16), B: uint8(c >> 8), A: uint8(c)}
	}
	palette := make(color.Palette, 0, 256)
	index := make(map[uint32]uint8, len(colours))
	kept := 0
	for i, c := range colours[:min(len(colours), 256)] {
		palette = append(palette, rgbaOf(c))
		index[c] = uint8(i)
		kept += counts[c]
	}
	for _, c := range colours[len(palette):] {
		index[c] = uint8(palette.Index(rgbaOf(c)))
	}
	out = image.NewPaletted(b, palette)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		prev := pixel(b.Min.X, y)
		i := index[prev]
		for x := b.Min.X; x < b.Max.X; x++ {
			if c := pixel(x, y); c != prev {
				prev, i = c, index[c]
			}
			out.Pix[out.PixOffset(x, y)] = i
		}
	}
	return out, float64(kept) / float64(max(1, b.Dx()*b.Dy()))
}

// Render draws a chart as an Image ChartWidth wide and ChartHeight high (or larger, as SVG),
// plus the height of its caption, if given, as SVG does; its Text is left for the caller to say.
func Render(p *plot.Plot, caption ...Caption) (*Image, error) {
	img, err := renderChart(p, 0, joinCaptions(caption), true)
	if err != nil {
		return nil, fmt.Errorf("nb: rendering %q: %w", p.Title.Text, err)
	}
	return img, nil
}
