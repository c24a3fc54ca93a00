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
		Long: "promote creates a ManualPromotion that lets the commit COMMIT into the sector SECTOR for " +
			"the HostedClusterPackage NAME, skipping the sectors of its spec.promotion.after: the " +
			"emergency fix. Only that commit is let through; the rollout inside the sector keeps its " +
			"partitions, budget and gates. Run it against each management cluster of the sector. " +
			"The ManualPromotion names the rollout by UID and lives in the namespace of its GitSource: " +
			"promoting needs the ClusterRole convoy-promoter bound in that namespace (and " +
			"convoy-rollout-reader), not the right to edit the HostedClusterPackage.",
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
	fs.StringVar(&opts.reason, "reason", "", "Why, for the people reading the ManualPromotion later.")
	_ = cmd.MarkFlagRequired("commit")
	_ = cmd.MarkFlagRequired("sector")
	return cmd
}

// runPromote creates the ManualPromotion of opts.commit into opts.sector for the
// HostedClusterPackage name, unless one exists, and says what it promoted.
func runPromote(ctx context.Context, c client.Client, out io.Writer, name string, opts promoteOptions) error {
	if !fullCommit.MatchString(opts.commit) {
		return fmt.Errorf("--commit %q is not a full commit id (40 or 64 lower-case hexadecimal digits)", opts.commit)
	}
	hcpkg := &convoyv1alpha1.HostedClusterPackage{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, hcpkg); err != nil {
		return fmt.Errorf("reading HostedClusterPackage %s: %w", name, err)
	}
	namespace := hcpkg.Spec.Template.Spec.SourceRef.Namespace
	if namespace == "" {
		return fmt.Errorf("HostedClusterPackage %s names no namespace for its GitSource, where promotions live", name)
	}
	what := fmt.Sprintf("commit %s into sector %s for %s", opts.commit[:12], opts.sector, name)
	existing, err := existingPromotion(ctx, c, hcpkg, opts.sector, opts.commit)
	if err != nil {
		return err
	}
	if existing != "" {
		_, err := fmt.Fprintf(out, "already promoted: %s by ManualPromotion %s/%s; nothing created\n", what, namespace, existing)
		return err
	}
	obj := newManualPromotion(hcpkg, opts)
	if err := c.Create(ctx, obj); err != nil {
		return fmt.Errorf("creating the ManualPromotion of %s in namespace %s: %w", what, namespace, err)
	}
	if _, err := fmt.Fprintf(out, "promoted %s: ManualPromotion %s/%s\n", what, obj.Namespace, obj.Name); err != nil {
		return err
	}
	if p := hcpkg.Spec.Promotion; p == nil || len(p.After) == 0 {
		_, err = fmt.Fprintf(out, "note: %s has no upstream sector (spec.promotion.after): it needs no promotion\n", name)
	}
	return err
}

// existingPromotion returns the name of a ManualPromotion of (hcpkg by UID, sector, commit) in
// the namespace of its GitSource, or "".
func existingPromotion(ctx context.Context, c client.Reader, hcpkg *convoyv1alpha1.HostedClusterPackage, sector, commit string) (string, error) {
	list := &convoyv1alpha1.ManualPromotionList{}
	if err := c.List(ctx, list, client.InNamespace(hcpkg.Spec.Template.Spec.SourceRef.Namespace)); err != nil {
		return "", fmt.Errorf("listing ManualPromotions: %w", err)
	}
	for _, item := range list.Items {
		s := item.Spec
		if s.HostedClusterPackageUID == string(hcpkg.UID) && s.Sector == sector && s.Commit == commit {
			return item.Name, nil
		}
	}
	return "", nil
}

// newManualPromotion returns the ManualPromotion of opts in the namespace of the rollout's
// GitSource, named after the HostedClusterPackage by the API server and owned by it (without
// blocking its deletion) so that it goes with it.
func newManualPromotion(hcpkg *convoyv1alpha1.HostedClusterPackage, opts promoteOptions) *convoyv1alpha1.ManualPromotion {
	return &convoyv1alpha1.ManualPromotion{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    hcpkg.Spec.Template.Spec.SourceRef.Namespace,
			GenerateName: hcpkg.Name + "-",
			Labels:       map[string]string{convoyv1alpha1.HostedClusterPackageLabel: hcpkg.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: convoyv1alpha1.GroupVersion.String(),
				Kind: "HostedClusterPackage", Name: hcpkg.Name, UID: hcpkg.UID}},
		},
		Spec: convoyv1alpha1.ManualPromotionSpec{HostedClusterPackage: hcpkg.Name, HostedClusterPackageUID: string(hcpkg.UID),
			Sector: opts.sector, Commit: opts.commit, Reason: opts.reason},
	}
}
