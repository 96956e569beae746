package bench

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// chartSeries is one line on a workload's chart: a system's runs against
// threads, or a cluster's against its node count.
type chartSeries struct {
	Name   string
	Points []chartPoint
}

// chartPoint is one measured run: X is its thread or node count, Rate
// its workload's rate (rateOf: QPS, or rows/s).
type chartPoint struct {
	X         int
	Rate, P95 float64
}

// threadPoints are the runs that did not fail, against their threads.
func threadPoints(workload string, runs []ThreadRun) []chartPoint {
	var pts []chartPoint
	for _, r := range runs {
		if r.Error == "" {
			pts = append(pts, chartPoint{X: r.Threads, Rate: rateOf(workload).Of(r.Summary), P95: r.Summary.P95LatencyMs})
		}
	}
	return pts
}

// writeChart writes a PNG of two plots side by side, the workload's rate
// (QPS, or rows/s: rateOf) and 95th percentile latency against xLabel
// (threads, SQL nodes), one line per series, the x axis marked at each
// value measured.
func writeChart(path, workload, xLabel string, series []chartSeries) error {
	qps, p95 := plot.New(), plot.New()
	rate := rateOf(workload)
	qps.Title.Text = workload + ": " + rate.Label
	qps.Y.Label.Text = rate.Axis
	p95.Title.Text = workload + ": 95% latency"
	p95.Y.Label.Text = "ms"
	minT, maxT := 0, 0
	var ticks []plot.Tick // one per x measured
	var qpsLines, p95Lines []any
	for _, s := range series {
		q, l := make(plotter.XYs, 0, len(s.Points)), make(plotter.XYs, 0, len(s.Points))
		for _, pt := range s.Points {
			q = append(q, plotter.XY{X: float64(pt.X), Y: pt.Rate})
			l = append(l, plotter.XY{X: float64(pt.X), Y: pt.P95})
			if minT == 0 || pt.X < minT {
				minT = pt.X
			}
			maxT = max(maxT, pt.X)
			if !slices.ContainsFunc(ticks, func(t plot.Tick) bool { return t.Value == float64(pt.X) }) {
				ticks = append(ticks, plot.Tick{Value: float64(pt.X), Label: strconv.Itoa(pt.X)})
			}
		}
		qpsLines = append(qpsLines, s.Name, q)
		p95Lines = append(p95Lines, s.Name, l)
	}
	for _, p := range []*plot.Plot{qps, p95} {
		p.X.Label.Text = xLabel
		p.Y.Min = 0
		p.Legend.Top = true
		if minT > 0 && maxT/minT >= 8 {
			p.X.Scale = plot.LogScale{}
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
	if err := plotutil.AddLinePoints(qps, qpsLines...); err != nil {
		return err
	}
	if err := plotutil.AddLinePoints(p95, p95Lines...); err != nil {
		return err
	}
	for _, p := range []*plot.Plot{qps, p95} {
		p.Y.Max *= 1.25 // room for the legend above the lines
		p.Legend.Left = true
		p.Y.Tick.Marker = roundTicks{}
		p.Add(plotter.NewGrid())
	}
	img := vgimg.New(vg.Points(900), vg.Points(360))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Millimeter * 6, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	canvases := plot.Align([][]*plot.Plot{{qps, p95}}, tiles, dc)
	qps.Draw(canvases[0][0])
	p95.Draw(canvases[0][1])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// ChartMark is an event marked on a time chart: a vertical line at Second.
type ChartMark struct {
	Second float64
	Label  string
}

// WriteTimeChart writes a PNG of QPS, and errors per second, against time
// from sysbench's --report-interval lines, with marks drawn as vertical
// lines (a fault and its repair).
func WriteTimeChart(path, title string, iv []Interval, marks []ChartMark) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "per second"
	p.Y.Min = 0
	qps, errs := make(plotter.XYs, len(iv)), make(plotter.XYs, len(iv))
	top := 0.0
	for i, v := range iv {
		qps[i] = plotter.XY{X: v.Second, Y: v.QPS}
		errs[i] = plotter.XY{X: v.Second, Y: v.ErrPerSec}
		top = max(top, v.QPS, v.ErrPerSec)
	}
	if err := plotutil.AddLines(p, "queries", qps, "errors", errs); err != nil {
		return err
	}
	for i, m := range marks {
		l, err := plotter.NewLine(plotter.XYs{{X: m.Second, Y: 0}, {X: m.Second, Y: top * 1.1}})
		if err != nil {
			return err
		}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		l.Color = plotutil.Color(i + 2) // after the two lines'
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s at %.1f s", m.Label, m.Second), l)
	}
	p.Legend.Top = true
	p.Y.Tick.Marker = roundTicks{}
	p.Add(plotter.NewGrid())
	return p.Save(vg.Points(900), vg.Points(360), path)
}

// roundTicks marks a value axis at round steps (1, 2 or 5 times a power
// of ten), four to nine of them, labelled with no more decimals than the
// step needs; gonum's default marks few values on a range such as
// 0-31,250 and labels them 0.00 ... 30000.00.
type roundTicks struct{}

func (roundTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / 8 // 3 to 8 steps
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	decimals := max(0, -int(math.Floor(math.Log10(step))))
	var ticks []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi+step/1e6; i++ {
		v := i * step
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
	}
	return ticks
}
