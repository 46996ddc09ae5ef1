package nb

import (
	"fmt"
	"image"
	"image/color"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// tileSize is the side of one image of ImageGrid.
const tileSize = 2.4 * vg.Centimeter

// ImageGrid draws the first n images of recs in a grid of cols columns, each titled with its
// label and class name, as an Image (the SVG embeds each image as a 32x32 PNG, so the document
// stays small; its bitmap is a JPEG, 30-40 kB for 16 images):
// PyTorch users' torchvision.utils.make_grid with the labels. A caption under the grid, and in
// its text, says which data the images are (DataCaption of recs' Kind): synthetic ones in red.
func ImageGrid(recs *data.Records, n, cols int) (*Image, error) {
	if recs == nil || n < 1 || n > recs.Len() || cols < 1 {
		return nil, fmt.Errorf("nb: ImageGrid(%d images, %d columns): need 1 to %d images and at least one column",
			n, cols, recsLen(recs))
	}
	rows := (n + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	names := make([]string, n)
	for i := range n {
		if i%cols == 0 {
			plots[i/cols] = make([]*plot.Plot, cols)
		}
		label := recs.Label(i)
		names[i] = fmt.Sprintf("%d:%s", label, recs.Spec.ClassName(label))
		p := plot.New()
		p.Title.Text = names[i]
		p.Title.TextStyle.Font.Typeface, p.Title.TextStyle.Font.Variant = chartFont.Typeface, chartFont.Variant
		p.Title.TextStyle.Font.Size = vg.Points(8)
		p.HideAxes()
		p.Add(plotter.NewImage(recordImage(recs, i), 0, 0, data.ImageWidth, data.ImageHeight))
		plots[i/cols][i%cols] = p
	}
	caption := DataCaption(recs.Spec.ID(), recs.Kind)
	width := tileSize * vg.Length(cols)
	below := caption.height(width - 2*captionMargin)
	img, err := renderImage(width, tileSize*vg.Length(rows)+below, true, func(dc draw.Canvas) {
		caption.draw(draw.Crop(dc, 0, 0, 0, -tileSize*vg.Length(rows)))
		dc = draw.Crop(dc, 0, 0, below, 0)
		tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter, PadY: vg.Millimeter}
		for j, row := range plot.Align(plots, tiles, dc) {
			for i, c := range row {
				if plots[j][i] != nil {
					plots[j][i].Draw(c)
				}
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("nb: ImageGrid: %w", err)
	}
	img.Text = caption.withText(fmt.Sprintf("first %d images of %s: %s", n, recs.Source, strings.Join(names, ", ")))
	return img, nil
}

func recsLen(r *data.Records) int {
	if r == nil {
		return 0
	}
	return r.Len()
}

// recordImage is example i of recs (stored as planar R, G, B planes) as an image.
func recordImage(recs *data.Records, i int) image.Image {
	planar := recs.Image(i)
	const plane = data.ImageHeight * data.ImageWidth
	img := image.NewNRGBA(image.Rect(0, 0, data.ImageWidth, data.ImageHeight))
	for p := range plane {
		img.SetNRGBA(p%data.ImageWidth, p/data.ImageWidth,
			color.NRGBA{R: planar[p], G: planar[plane+p], B: planar[2*plane+p], A: 255})
	}
	return img
}
