package main

import (
	"context"
	"fmt"
	"io"
	"regexp"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// promoteOptions are the flags of `convoy promote`.
type promoteOptions struct {
	kubeconfig string
	commit     string
	sector     string
	reason     string
}

// fullCommit is a full SHA-1 or SHA-256 commit id: a promotion names one commit, never a
// prefix that a later commit could share.
var fullCommit = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

func newPromoteCmd() *cobra.Command {
	opts := promoteOptions{}
	cmd := &cobra.Command{
		Use:   "promote NAME --commit COMMIT --sector SECTOR",
		Short: "Let one commit into a sector without waiting for its upstream sectors",
		Long: "promote creates a PromotionApproval that lets the commit COMMIT into the sector SECTOR for " +
			"the HostedClusterPackage NAME, skipping the sectors of its spec.promotion.after: the " +
			"emergency fix. Only that commit is let through; the rollout inside the sector keeps its " +
			"partitions, budget and gates. Run it against each management cluster of the sector. " +
			"Promoting needs the ClusterRole convoy-promoter, not the right to edit the HostedClusterPackage.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newCLIClient(opts.kubeconfig)
			if err != nil {
				return err
			}
			return runPromote(cmd.Context(), c, cmd.OutOrStdout(), args[0], opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "", "Kubeconfig of the management cluster (default: $KUBECONFIG, in-cluster, then ~/.kube/config).")
	fs.StringVar(&opts.commit, "commit", "", "Full commit id to promote (required).")
	fs.StringVar(&opts.sector, "sector", "", "Sector the commit enters: the management cluster's --sector (required).")
	fs.StringVar(&opts.reason, "reason", "", "Why, for the people reading the PromotionApproval later.")
	_ = cmd.MarkFlagRequired("commit")
	_ = cmd.MarkFlagRequired("sector")
	return cmd
}

// runPromote creates the PromotionApproval of opts.commit into opts.sector for the
// HostedClusterPackage name, unless one exists, and says what it promoted.
func runPromote(ctx context.Context, c client.Client, out io.Writer, name string, opts promoteOptions) error {
	if !fullCommit.MatchString(opts.commit) {
		return fmt.Errorf("--commit %q is not a full commit id (40 or 64 lower-case hexadecimal digits)", opts.commit)
	}
	hcpkg := &convoyv1alpha1.HostedClusterPackage{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, hcpkg); err != nil {
		return fmt.Errorf("reading HostedClusterPackage %s: %w", name, err)
	}
	what := fmt.Sprintf("commit %s into sector %s for %s", opts.commit[:12], opts.sector, name)
	existing, err := existingPromotion(ctx, c, name, opts.sector, opts.commit)
	if err != nil {
		return err
	}
	if existing != "" {
		_, err := fmt.Fprintf(out, "already promoted: %s by PromotionApproval %s; nothing created\n", what, existing)
		return err
	}
	obj := newPromotionApproval(hcpkg, opts)
	if err := c.Create(ctx, obj); err != nil {
		return fmt.Errorf("creating the PromotionApproval of %s: %w", what, err)
	}
	if _, err := fmt.Fprintf(out, "promoted %s: PromotionApproval %s\n", what, obj.Name); err != nil {
		return err
	}
	if p := hcpkg.Spec.Promotion; p == nil || len(p.After) == 0 {
		_, err = fmt.Fprintf(out, "note: %s has no upstream sector (spec.promotion.after): it needs no promotion\n", name)
	}
	return err
}

// existingPromotion returns the name of a PromotionApproval of (hcpkg, sector, commit), or "".
func existingPromotion(ctx context.Context, c client.Reader, hcpkg, sector, commit string) (string, error) {
	list := &convoyv1alpha1.PromotionApprovalList{}
	if err := c.List(ctx, list); err != nil {
		return "", fmt.Errorf("listing PromotionApprovals: %w", err)
	}
	for _, item := range list.Items {
		s := item.Spec
		if s.HostedClusterPackage == hcpkg && s.Sector == sector && s.Commit == commit {
			return item.Name, nil
		}
	}
	return "", nil
}

// newPromotionApproval returns the PromotionApproval of opts, named after the
// HostedClusterPackage by the API server and owned by it (without blocking its deletion) so
// that it goes with it.
func newPromotionApproval(hcpkg *convoyv1alpha1.HostedClusterPackage, opts promoteOptions) *convoyv1alpha1.PromotionApproval {
	return &convoyv1alpha1.PromotionApproval{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: hcpkg.Name + "-",
			Labels:       map[string]string{convoyv1alpha1.HostedClusterPackageLabel: hcpkg.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: convoyv1alpha1.GroupVersion.String(),
				Kind: "HostedClusterPackage", Name: hcpkg.Name, UID: hcpkg.UID}},
		},
		Spec: convoyv1alpha1.PromotionApprovalSpec{HostedClusterPackage: hcpkg.Name, Sector: opts.sector,
			Commit: opts.commit, Reason: opts.reason},
	}
}
