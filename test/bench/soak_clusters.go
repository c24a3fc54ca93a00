package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// pickCluster returns a random live HostedCluster without a hosted API server (the hosted
// add-on's sample stays whole) that the budget still judges, or nil.
func (s *soakRun) pickCluster() *simfleet.HostedCluster {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*simfleet.HostedCluster
	for _, hc := range s.live {
		if !s.hosted[hc.HCPNamespace] && !s.skip[hc.HCPNamespace] {
			out = append(out, hc)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out[s.choices.IntN(len(out))]
}

// createCluster adds one HostedCluster, in the next partition in turn.
func createCluster(ctx context.Context, s *soakRun) (string, error) {
	name := fmt.Sprintf("hc-%04d", s.nextCluster)
	return name, s.addClusters(ctx, 1, 0)
}

// deleteCluster begins the deletion of a random HostedCluster and finishes it 20 s later; the
// cluster leaves the judged fleet at once.
func deleteCluster(ctx context.Context, s *soakRun) (string, error) {
	hc := s.pickCluster()
	if hc == nil {
		return "no cluster to delete", nil
	}
	s.mu.Lock()
	s.skip[hc.HCPNamespace] = true
	s.live = slices.DeleteFunc(s.live, func(o *simfleet.HostedCluster) bool { return o == hc })
	delete(s.e.namespaces, hc.HCPNamespace)
	s.mu.Unlock()
	if err := s.e.fleet.BeginDeletion(ctx, hc); err != nil {
		return "", err
	}
	s.later(20*time.Second, "finish-deletion-"+hc.Name, func(ctx context.Context) error {
		return s.e.fleet.FinishDeletion(ctx, hc)
	})
	return hc.Name, nil
}

// relabelCluster moves a random HostedCluster to another partition. The barrier no longer
// judges it: its history is in the partition it left.
func relabelCluster(ctx context.Context, s *soakRun) (string, error) {
	hc := s.pickCluster()
	if hc == nil {
		return "no cluster to relabel", nil
	}
	s.mu.Lock()
	labels := maps.Clone(s.labels[hc.HCPNamespace])
	from := labels[soakPartitionKey]
	to := soakPartitions[(slices.Index(soakPartitions, from)+1+s.choices.IntN(2))%len(soakPartitions)]
	labels[soakPartitionKey] = to
	s.labels[hc.HCPNamespace] = labels
	s.partition[hc.HCPNamespace] = to
	s.skip[hc.HCPNamespace] = true
	s.mu.Unlock()
	return fmt.Sprintf("%s from %s to %s", hc.Name, from, to), s.e.fleet.SetLabels(ctx, hc, labels)
}

// makeUnavailable sets a random HostedCluster's Available condition False and back True a
// minute later (or BrokenFor, if shorter).
func makeUnavailable(ctx context.Context, s *soakRun) (string, error) {
	hc := s.pickCluster()
	if hc == nil {
		return "no cluster to make unavailable", nil
	}
	s.mu.Lock()
	s.skip[hc.HCPNamespace] = true
	s.mu.Unlock()
	if err := s.e.fleet.SetAvailable(ctx, hc, false); err != nil {
		return "", err
	}
	s.later(min(time.Minute, s.cfg.BrokenFor), "available-again-"+hc.Name, func(ctx context.Context) error {
		if !slices.Contains(s.liveClusters(), hc) {
			return nil
		}
		return s.e.fleet.SetAvailable(ctx, hc, true)
	})
	return hc.Name, nil
}

// liveClusters returns the live HostedClusters.
func (s *soakRun) liveClusters() []*simfleet.HostedCluster {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.live)
}
