package ui

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// Chart geometry: one bar per hour of the last 7 days.
const (
	chartHours  = 7 * 24
	chartBarW   = 4
	chartHeight = 120
	chartLeft   = 40
	chartWidth  = chartLeft + chartHours*chartBarW + 40
)

// healthChart draws a webhook's last 7 days as an SVG picture, server side
// (no script): per hour, a bar of its deliveries stacked by outcome
// (succeeded, failed, in progress, not sent), and a line of the hour's
// attempt p95 on its own scale, against the 10 s limit. Only numbers we
// computed go into it.
func healthChart(hours []deliveries.Hour, now time.Time) template.HTML {
	end := now.Truncate(time.Hour)
	start := end.Add(-(chartHours - 1) * time.Hour)
	var most int64 = 1
	var slowest time.Duration = 10 * time.Second
	for _, h := range hours {
		most = max(most, h.Succeeded+h.Failed+h.InProgress+h.NotSent)
		slowest = max(slowest, h.AttemptP95)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="health-chart" role="img" viewBox="0 0 %d %d" width="%d" height="%d" xmlns="http://www.w3.org/2000/svg">`,
		chartWidth, chartHeight+30, chartWidth, chartHeight+30)
	fmt.Fprintf(&b, `<title>Deliveries per hour by outcome, and attempt p95, over the last 7 days</title>`)
	fmt.Fprintf(&b, `<text x="0" y="10" font-size="9">%d</text><text x="0" y="%d" font-size="9">0</text>`, most, chartHeight)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999" stroke-width="0.5"/>`, chartLeft, chartHeight, chartLeft+chartHours*chartBarW, chartHeight)
	var line []string
	for _, h := range hours {
		i := int(h.Start.Sub(start) / time.Hour)
		if i < 0 || i >= chartHours {
			continue
		}
		x := chartLeft + i*chartBarW
		y := chartHeight
		for _, part := range []struct {
			n     int64
			class string
		}{{h.Succeeded, "ok"}, {h.Failed, "bad"}, {h.InProgress, "warn"}, {h.NotSent, "off"}} {
			if part.n == 0 {
				continue
			}
			hgt := max(1, int(part.n*int64(chartHeight-12)/most))
			y -= hgt
			fmt.Fprintf(&b, `<rect class="bar-%s" x="%d" y="%d" width="%d" height="%d"><title>%s: %d %s</title></rect>`,
				part.class, x, y, chartBarW-1, hgt, h.Start.UTC().Format("Jan 2 15:04"), part.n, part.class)
		}
		if h.AttemptP95 > 0 {
			py := chartHeight - int(int64(h.AttemptP95)*int64(chartHeight-12)/int64(slowest))
			line = append(line, fmt.Sprintf("%d,%d", x+chartBarW/2, py))
		}
	}
	limit := chartHeight - int(int64(10*time.Second)*int64(chartHeight-12)/int64(slowest))
	fmt.Fprintf(&b, `<line class="limit" x1="%d" y1="%d" x2="%d" y2="%d" stroke-dasharray="4 3"><title>the 10 s limit</title></line>`,
		chartLeft, limit, chartLeft+chartHours*chartBarW, limit)
	if len(line) > 0 {
		fmt.Fprintf(&b, `<polyline class="p95" fill="none" points="%s"><title>attempt p95 per hour</title></polyline>`, strings.Join(line, " "))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="9">%s</text><text x="%d" y="%d" font-size="9" text-anchor="end">now</text>`,
		chartLeft, chartHeight+14, start.UTC().Format("Jan 2"), chartLeft+chartHours*chartBarW, chartHeight+14)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="9">succeeded · failed · in progress · not sent (bars); attempt p95 (line, 10 s dashed)</text>`, chartLeft, chartHeight+26)
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // only numbers and fixed text
}
