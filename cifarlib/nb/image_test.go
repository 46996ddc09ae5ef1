package nb

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/janpfeifer/gonb/gonbui/protocol"
	"github.com/stretchr/testify/require"
)

// requirePNG checks that img's PNG has one pixel per CSS pixel of its display size, and returns
// it decoded.
func requirePNG(t *testing.T, img *Image) image.Image {
	t.Helper()
	require.NotNil(t, img)
	decoded, err := png.Decode(bytes.NewReader(img.PNG))
	require.NoError(t, err, "the PNG does not decode")
	require.Equal(t, image.Rect(0, 0, img.Width, img.Height), decoded.Bounds())
	require.Contains(t, img.SVG, `width="`)
	return decoded
}

// TestChartImage: a chart is drawn twice, as SVG and as a PNG of the same size,
// small enough for a committed notebook; the PNG is on white, with the chart's colours exact.
func TestChartImage(t *testing.T) {
	h := history(200, 50, 100, 150, 200)
	p, err := LossChart(h)
	require.NoError(t, err)
	img, err := Render(p, SourceCaption(testSource))
	require.NoError(t, err)
	decoded := requirePNG(t, img)
	_, isPaletted := decoded.(*image.Paletted)
	require.True(t, isPaletted, "a chart's PNG is paletted, %T", decoded)
	w, _, _ := chartPainter(p, 0, SourceCaption(testSource))
	require.Equal(t, cssPixels(w), img.Width, "its width at 96 CSS pixels per inch")
	require.GreaterOrEqual(t, img.Width, 680, "18 cm, or wider for a wide legend")
	require.Less(t, len(img.PNG), 20_000, "a chart's PNG stays small")
	t.Logf("loss chart of 200 steps: SVG %d bytes, PNG %d bytes (%dx%d)", len(img.SVG), len(img.PNG), decoded.Bounds().Dx(), decoded.Bounds().Dy())
	colours := map[color.RGBA]bool{}
	b := decoded.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			colours[color.RGBAModel.Convert(decoded.At(x, y)).(color.RGBA)] = true
		}
	}
	for name, c := range map[string]color.RGBA{"white": {255, 255, 255, 255}, "blue": blue, "orange": orange, "grey": grey, "caption red": captionRed} {
		require.True(t, colours[c], "%s is drawn exactly", name)
	}

	data, metadata := img.bundle()
	require.Equal(t, img.SVG, data[protocol.MIMEImageSVG])
	require.Equal(t, img.PNG, data[protocol.MIMEImagePNG])
	require.Equal(t, map[string]any{"image/png": map[string]any{"width": img.Width, "height": img.Height}}, metadata,
		"the PNG is shown at the SVG's size")
}

// TestPaletted: an image of at most 256 colours keeps them all; of more, the 256 most frequent
// are kept exactly and each other becomes its nearest kept colour; it says the share kept.
func TestPaletted(t *testing.T) {
	few := image.NewRGBA(image.Rect(0, 0, 20, 20))
	for i := range 20 * 20 {
		few.Set(i%20, i/20, color.RGBA{R: uint8(i % 200), G: 10, B: 20, A: 255})
	}
	out, exact := paletted(few)
	require.Equal(t, 1.0, exact)
	for i := range 20 * 20 {
		require.Equal(t, few.At(i%20, i/20), color.RGBAModel.Convert(out.At(i%20, i/20)))
	}

	many := image.NewRGBA(image.Rect(0, 0, 300, 2))
	for x := range 300 { // 300 near-greys once each, and a blue on the second row, 300 times
		grey := uint8(x * 255 / 299)
		many.Set(x, 0, color.RGBA{R: grey, G: grey, B: uint8(x % 2), A: 255})
		many.Set(x, 1, blue)
	}
	out, exact = paletted(many)
	require.Len(t, out.Palette, 256)
	require.InDelta(t, float64(300+255)/600, exact, 1e-12, "blue and 255 greys kept")
	for x := range 300 {
		require.Equal(t, blue, color.RGBAModel.Convert(out.At(x, 1)), "the most frequent colour is exact")
		was := many.At(x, 0)
		require.Equal(t, out.Palette.Convert(was), out.At(x, 0), "a colour becomes the nearest kept one")
		if x < 255 {
			require.Equal(t, was, out.At(x, 0), "the first 255 (ties in order) are kept")
		}
	}
}
