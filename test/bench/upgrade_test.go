package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// previousCommit is the previous release: the commit that took the snapshot of
// hack/release/testdata/previous-crds (`make release`'s upgrade test of the CRDs).
const previousCommit = "92f652e8b672e3e88c106fa6953ce429b08733c0"

// upgradeClusters is the size of the upgrade test's fleet: a budget of 5 over 10 waves.
const upgradeClusters = 50

// TestUpgradeMidRollout replaces the controller mid-rollout: the previous release's binary
// rolls a commit out over 50 HostedClusters, is stopped, the CRDs are upgraded and the current
// binary takes over; then the current binary rolls the next commit out and the previous one
// takes over (the CRDs stay upgraded: a downgrade does not take them back). Each rollout must
// complete with one spec update per Package, no Package or object re-created, no write to the
// objects of the Packages already done, and the budget held.
func TestUpgradeMidRollout(t *testing.T) {
	fleet.RequireAPIServers(t)
	ctrllog.SetLogger(logr.Discard())
	g := NewWithT(t)
	ctx := context.Background()
	current, previous := buildConvoy(t), previousConvoy(t)

	e, err := newEnv(ctx, Config{ConvoyBinary: previous, WorkDir: t.TempDir(), Concurrency: 4}, envInput{Clusters: upgradeClusters})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = e.close() }()
	g.Expect(applyCRDsAt(ctx, e.admin, previousCommit)).To(Succeed(), "the previous release's CRDs")
	g.Expect(installForFaults(ctx, e)).To(Succeed())

	for _, step := range []struct {
		name string
		to   string
		crds bool
	}{{"upgrade", current, true}, {"downgrade", previous, false}} {
		start := time.Now()
		done, err := rollAcrossSwap(ctx, g, e, step.to, step.crds)
		g.Expect(err).NotTo(HaveOccurred(), "%s; see %s", step.name, e.ctrl.LogPath())
		t.Logf("%s mid-rollout: %d of %d Packages done at the swap; rolled out in %s", step.name, done, upgradeClusters,
			time.Since(start).Round(time.Second))
	}
}

// upgradeSnapshot is what a swap must leave alone: each Package's UID and generation, and the
// UID and resourceVersion of each object the Packages applied.
type upgradeSnapshot struct {
	packages map[types.NamespacedName]*convoyv1alpha1.Package
	objects  map[types.NamespacedName]metav1.ObjectMeta
}

// rollAcrossSwap commits the next revision, waits until the rollout updated more Packages than
// its budget, replaces the controller by one of binary to (upgrading the CRDs first when crds),
// and checks the rollout's end against the snapshots taken before the commit and at the swap.
// It returns how many Packages were done at the swap.
func rollAcrossSwap(ctx context.Context, g Gomega, e *env, to string, crds bool) (int, error) {
	before, err := snapshotFleet(ctx, e)
	if err != nil {
		return 0, err
	}
	commit, err := commitAndPoll(ctx, e)
	if err != nil {
		return 0, err
	}
	s := startSampler(ctx, e, e.namespaces, &target{commit: commit})
	budget := max(1, upgradeClusters/10)
	if err := waitUpdated(ctx, e, commit, budget+1); err != nil {
		return 0, err
	}
	if err := e.ctrl.Stop(); err != nil {
		return 0, err
	}
	atSwap, err := snapshotFleet(ctx, e)
	if err != nil {
		return 0, err
	}
	if crds {
		if err := applyCRDsAt(ctx, e.admin, ""); err != nil {
			return 0, err
		}
	}
	e.cfg.ConvoyBinary = to
	if err := e.restartController(ctx); err != nil {
		return 0, err
	}
	if _, err := waitSettled(ctx, e, commit); err != nil {
		return 0, err
	}
	maxBusy, _, _ := s.stop()
	after, err := snapshotFleet(ctx, e)
	if err != nil {
		return 0, err
	}
	g.Expect(maxBusy).To(BeNumerically("<=", budget), "Packages unavailable or updating at once")
	g.Expect(len(before.objects)).To(BeNumerically(">=", 7*upgradeClusters), "the ConfigMaps, Secret and ServiceAccount of each Package")
	return checkSwap(g, before, atSwap, after, commit), nil
}

// checkSwap checks the end of a rollout across a swap: each Package kept its UID and had one
// spec update (its pin to commit); each object kept its UID; the objects of the Packages done
// before the swap were not written since. It returns how many Packages were done at the swap.
func checkSwap(g Gomega, before, atSwap, after upgradeSnapshot, commit string) int {
	g.Expect(after.packages).To(HaveLen(len(before.packages)))
	for key, p := range after.packages {
		old := before.packages[key]
		g.Expect(old).NotTo(BeNil(), "Package %s", key)
		g.Expect(p.UID).To(Equal(old.UID), "Package %s re-created", key)
		g.Expect(p.Generation-old.Generation).To(BeEquivalentTo(1), "spec updates of Package %s", key)
	}
	for key, m := range after.objects {
		if old, ok := before.objects[key]; ok {
			g.Expect(m.UID).To(Equal(old.UID), "object %s re-created", key)
		}
	}
	done := 0
	for key, p := range atSwap.packages {
		if !progressedAt(commit)(p) {
			continue
		}
		done++
		for okey, m := range atSwap.objects {
			if okey.Namespace == key.Namespace {
				g.Expect(after.objects[okey].ResourceVersion).To(Equal(m.ResourceVersion),
					"object %s of Package %s, done before the swap, written after it", okey, key)
			}
		}
	}
	g.Expect(done).To(BeNumerically(">", 0), "some Packages were done before the swap")
	return done
}

// snapshotFleet reads every Package and the ConfigMaps, Secrets and Widgets of the HCP
// namespaces.
func snapshotFleet(ctx context.Context, e *env) (upgradeSnapshot, error) {
	snap := upgradeSnapshot{packages: map[types.NamespacedName]*convoyv1alpha1.Package{}, objects: map[types.NamespacedName]metav1.ObjectMeta{}}
	pkgs := &convoyv1alpha1.PackageList{}
	if err := e.admin.List(ctx, pkgs); err != nil {
		return snap, err
	}
	for i := range pkgs.Items {
		snap.packages[client.ObjectKeyFromObject(&pkgs.Items[i])] = &pkgs.Items[i]
	}
	for _, kind := range []string{"ConfigMap", "Secret", "ServiceAccount"} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind(kind + "List"))
		list.APIVersion = "v1"
		if err := e.admin.List(ctx, list, client.HasLabels{revisionLabel}); err != nil {
			return snap, err
		}
		for _, m := range list.Items {
			if e.namespaces[m.Namespace] {
				snap.objects[types.NamespacedName{Namespace: m.Namespace, Name: kind + "/" + m.Name}] = m.ObjectMeta
			}
		}
	}
	return snap, nil
}

// applyCRDsAt replaces convoy's CRDs with those of commit's deploy/crds, or of the worktree's
// when commit is empty, and waits until they are established.
func applyCRDsAt(ctx context.Context, c client.Client, commit string) error {
	root, err := simfleet.RepositoryRoot()
	if err != nil {
		return err
	}
	for _, kind := range []string{"gitsources", "packages", "objectdeployments", "hostedclusterpackages"} {
		path := "deploy/crds/convoy.dev_" + kind + ".yaml"
		raw, err := readAt(root, commit, path)
		if err != nil {
			return err
		}
		crd := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &crd.Object); err != nil {
			return fmt.Errorf("%s at %q: %w", path, commit, err)
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(crd.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(crd), live); err != nil {
			return err
		}
		crd.SetResourceVersion(live.GetResourceVersion())
		if err := c.Update(ctx, crd); err != nil {
			return fmt.Errorf("updating CRD %s to %q: %w", crd.GetName(), commit, err)
		}
	}
	return nil
}

// readAt reads path at commit of the repository at root, or from the worktree.
func readAt(root, commit, path string) ([]byte, error) {
	if commit == "" {
		return os.ReadFile(filepath.Join(root, path))
	}
	out, err := exec.Command("git", "-C", root, "show", commit+":"+path).Output()
	if err != nil {
		return nil, fmt.Errorf("git show %.12s:%s: %w", commit, path, err)
	}
	return out, nil
}

// previousConvoy returns the previous release's convoy, built once from previousCommit (git
// archive into a temporary folder, go build) and kept in the binaries folder by commit.
func previousConvoy(t *testing.T) string {
	t.Helper()
	g := NewWithT(t)
	root, err := simfleet.RepositoryRoot()
	g.Expect(err).NotTo(HaveOccurred())
	dir, err := simfleet.FindBinaryDir()
	g.Expect(err).NotTo(HaveOccurred())
	out := filepath.Join(dir, "convoy-"+previousCommit[:12])
	if _, err := os.Stat(out); err == nil {
		return out
	}
	src := t.TempDir()
	var stderr bytes.Buffer
	archive := exec.Command("sh", "-c", fmt.Sprintf("git -C %q archive %s | tar -x -C %q", root, previousCommit, src))
	archive.Stderr = &stderr
	g.Expect(archive.Run()).To(Succeed(), stderr.String())
	build := exec.Command("go", "build", "-o", out+".tmp", "./cmd/convoy")
	build.Dir = src
	raw, err := build.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(raw))
	g.Expect(os.Rename(out+".tmp", out)).To(Succeed())
	return out
}
