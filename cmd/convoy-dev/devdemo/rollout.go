package devdemo

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/rollout/fleetview"
)

// devFieldOwner is the field manager of what convoy-dev applies.
const devFieldOwner = "convoy-dev"

// rolloutResult is one completed rollout of the demo.
type rolloutResult struct {
	revision string
	commit   string
	// order lists the HostedClusters in the order their Package got the revision.
	order []string
	took  time.Duration
}

// awaitRollout prints a line each time the HostedClusterPackage's status changes, explains each
// gate that holds it (noteGate), and returns once a revision other than previous reached every
// cluster.
func (d *demo) awaitRollout(ctx context.Context, previous string) (*rolloutResult, error) {
	began := time.Now()
	res := &rolloutResult{}
	last := ""
	for {
		snaps, err := fleetview.ReadStatus(ctx, d.fleet.Client, d.hcpkg)
		if err != nil {
			return nil, err
		}
		report := fleetview.NewReport(snaps[0])
		if line := report.Line(); line != last {
			last = line
			d.printNote("%s", line)
		}
		if err := d.noteGate(ctx, snaps[0]); err != nil {
			return nil, err
		}
		st := snaps[0].HostedClusterPackage.Status
		if st.UpdateRevision != "" && st.UpdateRevision != previous {
			res.revision, res.commit = st.UpdateRevision, snaps[0].Revisions[st.UpdateRevision].Commit
			if rolloutDone(st, d.opts.Clusters) {
				res.took = time.Since(began)
				res.order = d.order.orderOf(res.commit)
				return res, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(d.opts.Refresh):
		}
	}
}

// rolloutDone reports whether the update revision is current and every cluster progressed.
func rolloutDone(st convoyv1alpha1.HostedClusterPackageStatus, clusters int) bool {
	n := int32(clusters)
	return st.CurrentRevision == st.UpdateRevision && st.TotalPackages == n && st.ProgressedPackages == n
}

// packages lists the Packages of the demo's HostedClusterPackage.
func (d *demo) packages(ctx context.Context) ([]convoyv1alpha1.Package, error) {
	list := &convoyv1alpha1.PackageList{}
	err := d.fleet.Client.List(ctx, list, client.MatchingLabels{convoyv1alpha1.HostedClusterPackageLabel: d.hcpkg})
	return list.Items, err
}

// printSummary checks that every cluster runs commit and prints the order it got there in.
func (d *demo) printSummary(ctx context.Context, res *rolloutResult, commit string) error {
	if res.commit != commit {
		return fmt.Errorf("the rollout completed at commit %s, not at the pushed %s", shortCommit(res.commit), shortCommit(commit))
	}
	pkgs, err := d.packages(ctx)
	if err != nil {
		return err
	}
	running := 0
	for _, p := range pkgs {
		if p.Spec.Revision == commit && p.Status.Revision == commit {
			running++
		}
	}
	if running != d.opts.Clusters {
		return fmt.Errorf("%d of %d hosted clusters run commit %s", running, d.opts.Clusters, shortCommit(commit))
	}
	fmt.Fprintf(d.out, "\nRollout of %s (commit %s) completed in %.1fs.\n", res.revision, shortCommit(commit), res.took.Seconds())
	fmt.Fprintf(d.out, "Order: %s\n", strings.Join(res.order, " "))
	fmt.Fprintf(d.out, "All %d hosted clusters run commit %s.\n", d.opts.Clusters, shortCommit(commit))
	return nil
}

// readObjects reads the objects of a YAML file.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return manifests.DecodeObjects(path, raw)
}

// applyObjects applies objs in order with server-side apply.
func applyObjects(ctx context.Context, c client.Client, objs ...*unstructured.Unstructured) error {
	for _, obj := range objs {
		//nolint:staticcheck // Patch with client.Apply takes unstructured objects as they come.
		if err := c.Patch(ctx, obj, client.Apply, client.ForceOwnership, client.FieldOwner(devFieldOwner)); err != nil {
			return fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

// namespaceObject returns a Namespace to apply.
func namespaceObject(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	u.SetName(name)
	return u
}

// shortCommit abbreviates a commit for the demo's output.
func shortCommit(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
