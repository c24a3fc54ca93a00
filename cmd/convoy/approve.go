package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/fleetview"
)

// approveOptions are the flags of `convoy approve`.
type approveOptions struct {
	kubeconfig string
	partition  string
	revision   string
}

func newApproveCmd() *cobra.Command {
	opts := approveOptions{}
	cmd := &cobra.Command{
		Use:   "approve NAME --partition PARTITION",
		Short: "Let a partition of a HostedClusterPackage start at its update revision",
		Long: "approve creates a PartitionApproval of the partition PARTITION of the HostedClusterPackage " +
			"NAME at its update revision (or --revision), which a partition with requireApproval waits " +
			"for. The approval names the rollout by UID and the revision by name and commit, so it never " +
			"lets another rollout or a newer commit through; it lives in the namespace of the rollout's " +
			"GitSource, is owned by the HostedClusterPackage and goes with it. An approval that exists " +
			"already is not created twice. Approving needs the ClusterRole convoy-rollout-approver bound " +
			"in that namespace (and convoy-rollout-reader), not the right to edit the HostedClusterPackage.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newCLIClient(opts.kubeconfig)
			if err != nil {
				return err
			}
			return runApprove(cmd.Context(), c, cmd.OutOrStdout(), args[0], opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "", "Kubeconfig of the management cluster (default: $KUBECONFIG, in-cluster, then ~/.kube/config).")
	fs.StringVar(&opts.partition, "partition", "", "Partition to approve (required).")
	fs.StringVar(&opts.revision, "revision", "", "Revision (ControllerRevision name) to approve instead of the update revision.")
	_ = cmd.MarkFlagRequired("partition")
	return cmd
}

// approval is what `convoy approve` approves, as read from the cluster.
type approval struct {
	hcpkg             *convoyv1alpha1.HostedClusterPackage
	namespace         string
	partition         string
	revision, commit  string
	requiresApproval  bool
	existing          string
	partitionsPresent []string
}

// runApprove creates the PartitionApproval of opts.partition of the HostedClusterPackage name at
// the update revision or opts.revision, unless one exists, and says what it approved.
func runApprove(ctx context.Context, c client.Client, out io.Writer, name string, opts approveOptions) error {
	a, err := readApproval(ctx, c, name, opts)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("partition %s of %s at revision %s (commit %s)", a.partition, name, a.revision, shortApprovedCommit(a.commit))
	if a.existing != "" {
		_, err := fmt.Fprintf(out, "already approved: %s by PartitionApproval %s/%s; nothing created\n", what, a.namespace, a.existing)
		return err
	}
	obj := newPartitionApproval(a)
	if err := c.Create(ctx, obj); err != nil {
		return fmt.Errorf("creating the PartitionApproval of %s in namespace %s: %w", what, a.namespace, err)
	}
	if _, err := fmt.Fprintf(out, "approved %s: PartitionApproval %s/%s\n", what, obj.Namespace, obj.Name); err != nil {
		return err
	}
	if !a.requiresApproval {
		_, err = fmt.Fprintf(out, "note: partition %s does not require an approval (spec.partition.policies)\n", a.partition)
	}
	return err
}

// readApproval reads the HostedClusterPackage name, the revision to approve and its commit, and
// an approval that exists already; it refuses a revision the HostedClusterPackage does not own
// and a partition its rollout does not have.
func readApproval(ctx context.Context, c client.Client, name string, opts approveOptions) (*approval, error) {
	snaps, err := fleetview.ReadStatus(ctx, c, name)
	if err != nil {
		return nil, err
	}
	snap := snaps[0]
	a := &approval{hcpkg: snap.HostedClusterPackage, partition: opts.partition, revision: opts.revision,
		namespace: snap.HostedClusterPackage.Spec.Template.Spec.SourceRef.Namespace}
	if a.namespace == "" {
		return nil, fmt.Errorf("HostedClusterPackage %s names no namespace for its GitSource, where approvals live", name)
	}
	if a.revision == "" {
		if a.revision = a.hcpkg.Status.UpdateRevision; a.revision == "" {
			return nil, fmt.Errorf("HostedClusterPackage %s has no update revision yet: its controller has not planned it; try again, or give --revision", name)
		}
	}
	rev, ok := snap.Revisions[a.revision]
	if !ok {
		return nil, fmt.Errorf("HostedClusterPackage %s has no revision %s (its update revision is %s)", name, a.revision, orDash(a.hcpkg.Status.UpdateRevision))
	}
	a.commit = rev.Commit
	for _, p := range a.hcpkg.Status.Partitions {
		a.partitionsPresent = append(a.partitionsPresent, p.Name)
	}
	if !slices.Contains(a.partitionsPresent, a.partition) {
		return nil, fmt.Errorf("HostedClusterPackage %s has no partition %q; its partitions are: %s", name, a.partition, partitionList(a.partitionsPresent))
	}
	a.requiresApproval = requiresApproval(a.hcpkg, a.partition)
	if rev.Rejected {
		return nil, fmt.Errorf("revision %s of %s is rejected: it rolls out nowhere again, and an approval of it would never count", a.revision, name)
	}
	if a.existing, err = existingApproval(ctx, c, a); err != nil {
		return nil, err
	}
	return a, nil
}

// existingApproval returns the name of a PartitionApproval of a (the rollout by UID, the
// partition, the revision and commit) in a.namespace, or "".
func existingApproval(ctx context.Context, c client.Reader, a *approval) (string, error) {
	list := &convoyv1alpha1.PartitionApprovalList{}
	if err := c.List(ctx, list, client.InNamespace(a.namespace)); err != nil {
		return "", fmt.Errorf("listing PartitionApprovals in %s: %w", a.namespace, err)
	}
	for _, item := range list.Items {
		s := item.Spec
		if s.HostedClusterPackageUID == string(a.hcpkg.UID) && s.Partition == a.partition && s.Revision == a.revision && s.Commit == a.commit {
			return item.Name, nil
		}
	}
	return "", nil
}

// newPartitionApproval returns the PartitionApproval of a, in the namespace of the rollout's
// GitSource: named after the HostedClusterPackage by the API server, labelled with it, and owned
// by it (not as its controller, and without blocking its deletion: an approver may not set
// finalizers on it) so that it is garbage collected with it.
func newPartitionApproval(a *approval) *convoyv1alpha1.PartitionApproval {
	return &convoyv1alpha1.PartitionApproval{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    a.namespace,
			GenerateName: a.hcpkg.Name + "-",
			Labels:       map[string]string{convoyv1alpha1.HostedClusterPackageLabel: a.hcpkg.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: convoyv1alpha1.GroupVersion.String(),
				Kind: "HostedClusterPackage", Name: a.hcpkg.Name, UID: a.hcpkg.UID}},
		},
		Spec: convoyv1alpha1.PartitionApprovalSpec{HostedClusterPackage: a.hcpkg.Name, HostedClusterPackageUID: string(a.hcpkg.UID),
			Partition: a.partition, Revision: a.revision, Commit: a.commit},
	}
}

// requiresApproval reports whether the policy of partition requires an approval. Policies
// match partitions by name, as the planner matches them: "*" is the partition of the label
// values a static order does not list, not a wildcard.
func requiresApproval(hcpkg *convoyv1alpha1.HostedClusterPackage, partition string) bool {
	if hcpkg.Spec.Partition == nil {
		return false
	}
	for _, p := range hcpkg.Spec.Partition.Policies {
		if p.Name == partition && p.RequireApproval {
			return true
		}
	}
	return false
}

// partitionList names partitions for a message.
func partitionList(names []string) string {
	if len(names) == 0 {
		return "none yet (the controller has not planned the rollout)"
	}
	return strings.Join(names, ", ")
}

// shortApprovedCommit abbreviates a commit to 7 characters, as Git does.
func shortApprovedCommit(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}
	return orDash(commit)
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
