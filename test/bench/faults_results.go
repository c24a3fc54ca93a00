package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"
)

// FaultResult is one row of the fault table, with the invariants it checked.
type FaultResult struct {
	// Fault is the fault's name.
	Fault string `json:"fault"`
	// Clusters is the number of HostedClusters (and Packages).
	Clusters int `json:"clusters"`
	// MaxUnavailable is the highest number of unavailable plus updating Packages sampled.
	MaxUnavailable int `json:"maxUnavailable"`
	// Budget is the rollout's maxUnavailable.
	Budget int `json:"budget"`
	// ObjectsLost counts the package's objects missing at the end.
	ObjectsLost int `json:"objectsLost"`
	// WrongRevision counts the Packages that did not end at the new revision.
	WrongRevision int `json:"wrongRevision"`
	// Recovery is the time from the (last) restart to the end of the rollout.
	Recovery time.Duration `json:"recovery"`
	// Rollout is the time from the new commit to the end of the rollout.
	Rollout time.Duration `json:"rollout"`
	// Restarts counts the controller's restarts.
	Restarts int `json:"restarts"`
	// GitFetches counts the fetches (upload-pack negotiations) the Git server served during
	// the rollout, the new commit's included.
	GitFetches int64 `json:"gitFetches"`
	// Ratio is, for FaultHostedDead, the healthy part's rollout time over the all-healthy one
	// (the larger of the whole healthy part's and the hosted clusters' own).
	Ratio float64 `json:"ratio,omitempty"`
	// Note says more, e.g. how long a standby took to take over.
	Note string `json:"note,omitempty"`
	// Samples is the number of fleet samples taken.
	Samples int `json:"samples"`
	// Passed says whether every invariant held.
	Passed bool `json:"passed"`
	// Error is set when the fault could not be run to its end.
	Error string `json:"error,omitempty"`
}

// FaultResults is the output of one run of the harness.
type FaultResults struct {
	// Started is when the run began.
	Started time.Time `json:"started"`
	// Duration of the whole run.
	Duration string `json:"duration"`
	// CPUs is the number of CPUs of the machine.
	CPUs int `json:"cpus"`
	// Config is the run's configuration.
	Config FaultsConfig `json:"config"`
	// Rows are the faults in order.
	Rows []FaultResult `json:"rows"`
}

// Passed reports whether every fault ran and kept every invariant.
func (r *FaultResults) Passed() bool {
	for _, row := range r.Rows {
		if !row.Passed {
			return false
		}
	}
	return len(r.Rows) > 0
}

// PrintFaultsTable writes the fault table.
func PrintFaultsTable(w io.Writer, res *FaultResults) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT\tCLUSTERS\tMAX UNAVAILABLE+UPDATING / BUDGET\tOBJECTS LOST\tWRONG REVISION\tTIME TO RECOVER\tROLLOUT\tRESTARTS\tGIT FETCHES\tPASSED\tNOTE")
	for _, r := range res.Rows {
		passed := map[bool]string{true: "yes", false: "NO"}[r.Passed]
		if r.Error != "" {
			passed += " (" + r.Error + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d / %d\t%d\t%d\t%.1f s\t%.1f s\t%d\t%d\t%s\t%s\n", r.Fault, r.Clusters, r.MaxUnavailable, r.Budget,
			r.ObjectsLost, r.WrongRevision, r.Recovery.Seconds(), r.Rollout.Seconds(), r.Restarts, r.GitFetches, passed, r.Note)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nrun: %s, %d CPUs, %s\n", res.Duration, res.CPUs, res.Started.UTC().Format(time.RFC3339))
}

// WriteFaultsJSON writes the results to path.
func WriteFaultsJSON(path string, res *FaultResults) error {
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}
