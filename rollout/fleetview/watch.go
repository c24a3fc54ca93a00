package fleetview

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// clearScreen moves the cursor home and clears the terminal.
const clearScreen = "\x1b[H\x1b[2J"

// WatchOptions tune Watch.
type WatchOptions struct {
	// Name of the HostedClusterPackage; empty watches all of them.
	Name string
	// Interval between two reads.
	Interval time.Duration
	// Terminal redraws the full report in place; otherwise each change prints plain lines.
	Terminal bool
	// Now is the clock of the timestamps of plain lines and of the waits a terminal redraw
	// shows ("in 3m"); time.Now when nil.
	Now func() time.Time
}

// Watch reads the HostedClusterPackages every interval until ctx is done. On a terminal it
// redraws the reports in place; otherwise it prints one timestamped line per HostedClusterPackage
// whose line changed, so that logs and pipes get a readable history.
func Watch(ctx context.Context, c client.Reader, out io.Writer, opts WatchOptions) error {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	last := map[string]string{}
	ticker := time.NewTicker(opts.Interval)
	defer ticker.Stop()
	for {
		snaps, err := ReadStatus(ctx, c, opts.Name)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if err == nil {
			draw(out, snaps, opts, last)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// draw prints one round of a watch; last holds the previous line of each HostedClusterPackage.
func draw(out io.Writer, snaps []*Snapshot, opts WatchOptions, last map[string]string) {
	if opts.Terminal {
		var b strings.Builder
		b.WriteString(clearScreen)
		fmt.Fprintf(&b, "Every %s: convoy status (%s)\n\n", opts.Interval, opts.Now().Format(time.TimeOnly))
		for _, s := range snaps {
			r := NewReport(s)
			r.Now = opts.Now()
			_ = r.WriteText(&b)
			b.WriteString("\n")
		}
		_, _ = io.WriteString(out, b.String())
		return
	}
	for _, s := range snaps {
		r := NewReport(s)
		line := r.Line()
		if last[r.Name] != line {
			last[r.Name] = line
			fmt.Fprintf(out, "%s %s\n", opts.Now().UTC().Format(time.TimeOnly), line)
		}
	}
}
