package dashboard

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The fleet of the page-load benchmark: 1,000 HostedClusters, seeded once.
var (
	bigFleetOnce sync.Once
	bigFleetErr  error
	bigFleet     = fixtureRollout{name: "big", prefix: "big", n: 1000}
)

// seedBigFleet creates the 1,000-cluster HostedClusterPackage once and waits for the cache.
func seedBigFleet(b *testing.B) {
	b.Helper()
	env.Require(b)
	bigFleetOnce.Do(func() {
		start := time.Now()
		bigFleetErr = bigFleet.seed(context.Background(), env.Fleet)
		b.Logf("seeded %d HostedClusters and Packages in %s", bigFleet.n, time.Since(start).Round(time.Second))
	})
	if bigFleetErr != nil {
		b.Fatal(bigFleetErr)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		v, err := BuildRollout(context.Background(), dash.reader, "big", RolloutQuery{}, time.Now())
		if err == nil && v.Packages.Total == int32(bigFleet.n) && len(v.Grid) == 3 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Fatal("the cache never showed the 1,000-cluster rollout")
}

// BenchmarkRolloutView1000Clusters builds the rollout view of 1,000 clusters from the cache, as
// each change does once for every open page of it.
func BenchmarkRolloutView1000Clusters(b *testing.B) {
	seedBigFleet(b)
	var size int
	for b.Loop() {
		v, err := BuildRollout(context.Background(), dash.reader, "big", RolloutQuery{}, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := json.Marshal(v)
		size = len(raw)
	}
	b.ReportMetric(float64(size), "bytes/view")
}

// BenchmarkRolloutPageLoad1000Clusters loads the rollout page of 1,000 clusters in headless
// Chromium, from navigation to the grid drawn (the first server-sent event rendered).
func BenchmarkRolloutPageLoad1000Clusters(b *testing.B) {
	seedBigFleet(b)
	path := os.Getenv("CONVOY_CHROMIUM")
	if path == "" {
		var err error
		if path, err = exec.LookPath("chromium"); err != nil {
			b.Fatal("no chromium: apt-get install -y chromium, or set CONVOY_CHROMIUM")
		}
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1280, 1000))...)
	defer cancelAlloc()
	page, cancelPage := chromedp.NewContext(alloc)
	defer cancelPage()
	if err := chromedp.Do(page, chromedp.Navigate(web.URL+"/")); err != nil {
		b.Fatal(err)
	}
	var worst time.Duration
	for b.Loop() {
		start := time.Now()
		err := chromedp.Do(page, chromedp.Navigate(web.URL+"/?load="+strconv.FormatInt(start.UnixNano(), 10)+"#/rollout/big"),
			chromedp.WaitVisible(chromedp.CSS(".grid-row[data-partition='late'] .cell")))
		if err != nil {
			b.Fatal(err)
		}
		worst = max(worst, time.Since(start))
	}
	cells, err := chromedp.Run(page, chromedp.Evaluate[int](`document.querySelectorAll('.cell').length`))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(worst.Milliseconds()), "worst-ms")
	b.ReportMetric(float64(cells), "cells-drawn")
}
