package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// expected returns the HCP namespaces add-on a must have a Package in: every live
// HostedCluster's, or for the hosted add-on those with a hosted API server.
func (s *soakRun) expected(a *soakAddon) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, hc := range s.live {
		if a.kind != soakHosted || s.hosted[hc.HCPNamespace] {
			out = append(out, hc.HCPNamespace)
		}
	}
	return out
}

// atGoal reports whether p progressed at a revision that holds a's current, good, revision.
func (s *soakRun) atGoal(a *soakAddon, p *convoyv1alpha1.Package) bool {
	if p == nil || (p.Spec.Revision != "" && p.Spec.Revision != p.Status.Revision) {
		return false
	}
	s.mu.Lock()
	got := s.contents[p.Status.Revision][a.name()]
	s.mu.Unlock()
	if got != (soakRev{Rev: a.rev}) || a.broken {
		return false
	}
	avail := apimeta.FindStatusCondition(p.Status.Conditions, convoyv1alpha1.AvailableCondition)
	return avail != nil && avail.Status == metav1.ConditionTrue && avail.ObservedGeneration == p.Generation &&
		apimeta.IsStatusConditionFalse(p.Status.Conditions, convoyv1alpha1.ProgressingCondition)
}

// notAtGoal describes the first Package of an add-on not at its goal and returns that add-on,
// or returns "" and nil.
func (s *soakRun) notAtGoal() (string, *soakAddon) {
	for _, a := range s.addons {
		pkgs := s.packagesOf(a)
		missing, behind := 0, ""
		for _, ns := range s.expected(a) {
			p := pkgs[ns]
			switch {
			case p == nil:
				missing++
			case !s.atGoal(a, p) && behind == "":
				behind = s.describeBehind(a, p)
			}
		}
		if missing > 0 || behind != "" {
			return fmt.Sprintf("%s at revision %d: %d Packages missing; %s", a.name(), a.rev, missing, behind), a
		}
	}
	return "", nil
}

// waitSettled waits until every add-on's Packages are at their goal. Past timeout, its error
// holds the statuses of the GitSource and of the HostedClusterPackage that did not settle.
func (s *soakRun) waitSettled(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		left, a := s.notAtGoal()
		if left == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the fleet did not settle within %s: %s\n%s", timeout, left, s.describeStatuses(ctx, a))
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return err
		}
	}
}

// describeStatuses returns the statuses of the GitSource and of add-on a's
// HostedClusterPackage as JSON, and the head of the branch the soak expects.
func (s *soakRun) describeStatuses(ctx context.Context, a *soakAddon) string {
	s.mu.Lock()
	head := s.head
	s.mu.Unlock()
	out := fmt.Sprintf("the soak's head: %s", head)
	gs := &convoyv1alpha1.GitSource{}
	hcp := &convoyv1alpha1.HostedClusterPackage{}
	objs := []struct {
		what string
		key  client.ObjectKey
		obj  client.Object
		st   func() any
	}{{"GitSource", client.ObjectKey{Namespace: benchNamespace, Name: gitSourceName}, gs, func() any { return gs.Status }},
		{"HostedClusterPackage", client.ObjectKey{Name: a.name()}, hcp, func() any { return hcp.Status }}}
	for _, o := range objs {
		if err := s.e.admin.Get(ctx, o.key, o.obj); err != nil {
			out += fmt.Sprintf("\n%s %s: %v", o.what, o.key, err)
			continue
		}
		raw, _ := json.MarshalIndent(o.st(), "", "  ")
		out += fmt.Sprintf("\n%s %s status: %s", o.what, o.key, raw)
	}
	return out
}

// countLostObjects returns how many management objects in the inventories of the add-ons'
// Packages are missing, and describes the first.
func (s *soakRun) countLostObjects(ctx context.Context) (int, string, error) {
	var mu sync.Mutex
	lost, first := 0, ""
	var refs []*metav1.PartialObjectMetadata
	for _, a := range s.addons {
		for _, p := range s.packagesOf(a) {
			for _, entry := range p.Status.Inventory {
				if m := inventoryObject(entry); m != nil && s.e.namespaces[p.Namespace] {
					refs = append(refs, m)
				}
			}
		}
	}
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var errs []error
	for _, m := range refs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := s.e.admin.Get(ctx, client.ObjectKeyFromObject(m), m)
			mu.Lock()
			defer mu.Unlock()
			if client.IgnoreNotFound(err) != nil {
				errs = append(errs, err)
			} else if err != nil {
				lost++
				first = fmt.Sprintf("%s %s/%s", m.Kind, m.Namespace, m.Name)
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return lost, first, errs[0]
	}
	return lost, first, nil
}

// inventoryObject returns the object an inventory entry names on the management cluster, or
// nil for a hosted one.
func inventoryObject(entry convoyv1alpha1.InventoryEntry) *metav1.PartialObjectMetadata {
	parts := strings.SplitN(entry.ID, "_", 4)
	if entry.Cluster != "management" || len(parts) != 4 {
		return nil
	}
	m := &metav1.PartialObjectMetadata{}
	// Note: v may be a bare version or a group/version.
	gv, err := schema.ParseGroupVersion(entry.Version)
	if err != nil {
		return nil
	}
	m.SetGroupVersionKind(schema.GroupVersionKind{Group: parts[2], Version: gv.Version, Kind: parts[3]})
	m.SetNamespace(parts[0])
	m.SetName(parts[1])
	return m
}

// describeBehind says why p is not at a's goal: its revisions, what the commit it reached
// holds of a, and its Available and Progressing conditions.
func (s *soakRun) describeBehind(a *soakAddon, p *convoyv1alpha1.Package) string {
	s.mu.Lock()
	held, known := s.contents[p.Status.Revision][a.name()]
	s.mu.Unlock()
	cond := func(t string) string {
		c := apimeta.FindStatusCondition(p.Status.Conditions, t)
		if c == nil {
			return t + " unset"
		}
		return fmt.Sprintf("%s=%s %s (generation %d of %d): %.160s", t, c.Status, c.Reason, c.ObservedGeneration, p.Generation, c.Message)
	}
	return fmt.Sprintf("%s/%s: spec.revision %.8s, status.revision %.8s (holds revision %d, broken %t, known %t); %s; %s",
		p.Namespace, p.Name, p.Spec.Revision, p.Status.Revision, held.Rev, held.Broken, known,
		cond(convoyv1alpha1.AvailableCondition), cond(convoyv1alpha1.ProgressingCondition))
}
