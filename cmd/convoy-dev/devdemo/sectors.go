package devdemo

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// SectorNames are the sectors of --sectors, in promotion order: each waits for the one before.
var SectorNames = []string{"canary", "eu", "us", "ap", "sa"}

// Settings of the sectors demo.
const (
	// sectorSoak is how long a sector waits after the one before it completed a commit.
	sectorSoak = 10
	// sectorsPackage is a package of examples/packages that needs no hosted API server, so
	// that each management cluster's hosted clusters are HostedCluster objects only.
	sectorsPackage = "metrics-forwarder"
	// sectorsChange is the file the demo's second commit changes.
	sectorsChange = "metrics-forwarder/rules/recording.yaml"
	// sectorsChangeRule is the recording rule the second commit appends to sectorsChange.
	sectorsChangeRule = `  - record: namespace:apiserver_request_errors:rate5m
    expr: sum by (namespace) (rate(apiserver_request_total{code=~"5.."}[5m]))
`
)

// managementCluster is one management cluster of the sectors demo.
type managementCluster struct {
	name, sector string
	fleet        *simfleet.Fleet
	kubeconfig   string
}

// runSectors runs the sectors demo: one management cluster per sector, each with its hosted
// clusters and its own controller, one Git repository as the bus; a commit moves across them,
// each sector after the one before completed and soaked it.
func runSectors(ctx context.Context, out io.Writer, opts Options) error {
	srv, dir, cleanup, err := startGitServer("convoy-dev-sectors-")
	if err != nil {
		return err
	}
	defer cleanup()
	sectors := SectorNames[:opts.Sectors]
	repo, err := seedSectorsRepository(srv, opts.Examples, sectors, out)
	if err != nil {
		return err
	}
	s := &sectorsDemo{out: out, opts: opts, start: time.Now(), url: srv.FileURL(devRepository)}
	defer s.stop()
	for i, sector := range sectors {
		if err := s.addManagementCluster(ctx, dir, s.url, sector, sectors[:i]); err != nil {
			return err
		}
	}
	s.printUsage()
	return s.follow(ctx, repo)
}

// seedSectorsRepository creates the repository: examples/packages and the sector map, each
// sector one management cluster named mc-<sector>.
func seedSectorsRepository(srv *gitserver.Server, examples string, sectors []string, out io.Writer) (*gitserver.Repo, error) {
	repo, err := srv.CreateRepo(devRepository)
	if err != nil {
		return nil, err
	}
	files, err := gitserver.ReadTree(filepath.Join(examples, "packages"), "")
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("apiVersion: convoy.dev/v1alpha1\nkind: SectorMap\nsectors:\n")
	for _, sector := range sectors {
		fmt.Fprintf(&b, "- name: %s\n  managementClusters: [%s]\n", sector, managementClusterOf(sector))
	}
	files["sectors.yaml"] = b.String()
	commit, err := repo.Commit("main", "Add the example packages and the sector map", files)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "Seeded %s with examples/packages and sectors.yaml (%s) at commit %s.\n",
		srv.FileURL(devRepository), strings.Join(sectors, " → "), shortCommit(commit))
	return repo, nil
}

// managementClusterOf names the management cluster of a sector.
func managementClusterOf(sector string) string { return "mc-" + sector }

// sectorsHostedClusterPackage is examples/hostedclusterpackage-promotion.yaml rolling out
// sectorsPackage, after the sector before (none for the first), with the demo's soak.
func sectorsHostedClusterPackage(examples string, upstream []string) (*unstructured.Unstructured, error) {
	objs, err := readObjects(filepath.Join(examples, "hostedclusterpackage-promotion.yaml"))
	if err != nil {
		return nil, err
	}
	h := objs[0]
	h.SetName(sectorsPackage)
	if err := unstructured.SetNestedField(h.Object, sectorsPackage, "spec", "template", "spec", "path"); err != nil {
		return nil, err
	}
	n := len(upstream)
	if n == 0 {
		unstructured.RemoveNestedField(h.Object, "spec", "promotion", "after")
		return h, nil
	}
	after := []any{map[string]any{"sector": upstream[n-1], "soakSeconds": int64(sectorSoak)}}
	return h, unstructured.SetNestedSlice(h.Object, after, "spec", "promotion", "after")
}
