package main

import (
	"context"
	"encoding/json"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
)

// browserSoakSeconds is the browser test's soak after early and after normal: long enough for
// the page to show the gate, short enough to keep the test quick.
const browserSoakSeconds = 3

// toneColours are the background colours of the condition pills' tones, as app.css sets them.
var toneColours = map[string]string{
	"rgb(223, 243, 230)": "good",
	"rgb(253, 232, 232)": "bad",
	"rgb(225, 237, 251)": "progress",
	"rgb(255, 240, 214)": "held",
	"rgb(232, 236, 241)": "unknown",
}

// healthyPills are the example HostedClusterPackage's conditions once a rollout is complete,
// each with the tone its pill has: all green.
var healthyPills = map[string]string{
	"Ready=True": "good", "Available=True": "good", "Progressing=False": "good", "HasPausedPackage=False": "good",
}

// failedPills are its conditions once a Package failed its progress deadline: the failure in
// red, the rollout that cannot go on in blue, what is still as it should be in green.
var failedPills = map[string]string{
	"Ready=False": "bad", "Stalled=True": "bad", "Available=True": "good", "Progressing=True": "progress",
	"HasPausedPackage=False": "good",
}

// readPillsJS reads each condition pill's text and computed background colour.
const readPillsJS = `JSON.stringify(Object.fromEntries(Array.from(document.querySelectorAll('.pill.condition')).map(p =>
  [p.textContent, getComputedStyle(p).backgroundColor])))`

// readPills returns the tone of each condition pill the page shows, by its colour ("Type=Status"
// to tone; the colour itself when it is no tone's).
func readPills(page context.Context) (map[string]string, error) {
	raw, err := chromedp.Run(page, chromedp.Evaluate[string](readPillsJS))
	if err != nil {
		return nil, err
	}
	colours := map[string]string{}
	if err := json.Unmarshal([]byte(raw), &colours); err != nil {
		return nil, err
	}
	tones := map[string]string{}
	for pill, colour := range colours {
		tones[pill] = colour
		if tone, ok := toneColours[colour]; ok {
			tones[pill] = tone
		}
	}
	return tones, nil
}

// expectConditionPills waits until the page shows exactly the condition pills of want, each in
// the colour of its tone.
func expectConditionPills(page context.Context, g Gomega, want map[string]string) {
	g.Eventually(func() (map[string]string, error) { return readPills(page) }).WithContext(page).
		WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Equal(want))
}

// grid is what the page shows: the update commit, the gate that holds the rollout (empty when
// none) and the cell states per partition.
type grid struct {
	commit string
	gate   string
	states map[string][]string
}

// readGridJS reads the grid from the page.
const readGridJS = `JSON.stringify({commit: (document.getElementById('update') || {dataset: {}}).dataset.commit || '',
  gate: (document.querySelector('.banner.gated') || {dataset: {}}).dataset.gate || '',
  states: Object.fromEntries(Array.from(document.querySelectorAll('.grid-row')).map(r =>
    [r.dataset.partition, Array.from(r.querySelectorAll('.cell')).map(c => c.dataset.state)]))})`

// readGrid reads the grid the page shows now.
func readGrid(page context.Context) (grid, error) {
	raw, err := chromedp.Run(page, chromedp.Evaluate[string](readGridJS))
	if err != nil {
		return grid{}, err
	}
	var v struct {
		Commit string              `json:"commit"`
		Gate   string              `json:"gate"`
		States map[string][]string `json:"states"`
	}
	err = json.Unmarshal([]byte(raw), &v)
	return grid{commit: v.Commit, gate: v.Gate, states: v.States}, err
}

// all reports whether every cell of partitions is in state.
func (gr grid) all(partitions []string, state string) bool {
	for _, p := range partitions {
		if len(gr.states[p]) == 0 {
			return false
		}
		for _, s := range gr.states[p] {
			if s != state {
				return false
			}
		}
	}
	return true
}

// count counts the cells in state.
func (gr grid) count(state string) int {
	n := 0
	for _, cells := range gr.states {
		for _, s := range cells {
			if s == state {
				n++
			}
		}
	}
	return n
}

// waitForGrid polls the page (never reloading it) until it shows commit (any when empty) and
// done holds.
func waitForGrid(page context.Context, g Gomega, commit string, done func(grid) bool) grid {
	var last grid
	g.Eventually(func() bool {
		gr, err := readGrid(page)
		last = gr
		return err == nil && (commit == "" || gr.commit == commit) && done(gr)
	}).WithContext(page).WithTimeout(2*time.Minute).WithPolling(100*time.Millisecond).Should(BeTrue(), "grid %+v", &last)
	return last
}
