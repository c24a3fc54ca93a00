package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/promotion"
	"github.com/convoy-gitops/convoy/sources"
)

// sectorsOptions are the flags of `convoy sectors`.
type sectorsOptions struct {
	url, branch, sectorMap, key, commit string
	timeout                             time.Duration
}

func newSectorsCmd() *cobra.Command {
	opts := sectorsOptions{}
	cmd := &cobra.Command{
		Use:   "sectors --url URL",
		Short: "Print what every management cluster published for each HostedClusterPackage",
		Long: "sectors reads the bus of sectors from the package repository at URL, as any machine with " +
			"read access can: the promotion refs (refs/convoy/promotion/<sector>/<management cluster>/<key>) " +
			"and the sector map at the head of --branch. It prints, for each sector of the map, each of its " +
			"management clusters and each key, the newest commit published (or --commit's) and its state; " +
			"a management cluster that has not published is listed as not reported. Access is anonymous, " +
			"or with credentials in the URL, which are never printed.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), opts.timeout)
			defer cancel()
			return runSectors(ctx, cmd.OutOrStdout(), opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.url, "url", "", "URL of the package repository (required).")
	fs.StringVar(&opts.branch, "branch", "main", "Branch whose head holds the sector map.")
	fs.StringVar(&opts.sectorMap, "sector-map", promotion.DefaultSectorMapPath, "Path of the sector map in the repository.")
	fs.StringVar(&opts.key, "key", "", "Print only this promotion key (a HostedClusterPackage's spec.promotion.key or name).")
	fs.StringVar(&opts.commit, "commit", "", "Print the state of this full commit id instead of each record's newest.")
	fs.DurationVar(&opts.timeout, "timeout", time.Minute, "Timeout of the whole read.")
	_ = cmd.MarkFlagRequired("url")
	return cmd
}

// busView is what `convoy sectors` read: the sector map and the records by
// "<sector>/<management cluster>/<key>".
type busView struct {
	sectors promotion.SectorMap
	records map[string]promotion.Record
}

// runSectors reads the bus and prints it.
func runSectors(ctx context.Context, out io.Writer, opts sectorsOptions) error {
	remote := sources.Remote{URL: opts.url}
	view, err := readBus(ctx, remote, opts)
	if err != nil {
		return remote.Redact(err)
	}
	return printSectors(out, view, opts)
}

// readBus fetches the head of the branch and the promotion refs into a temporary store, and
// reads the sector map and every record.
func readBus(ctx context.Context, remote sources.Remote, opts sectorsOptions) (busView, error) {
	root, err := os.MkdirTemp("", "convoy-sectors-")
	if err != nil {
		return busView{}, err
	}
	defer func() { _ = os.RemoveAll(root) }()
	store, err := sources.NewStore(root, sources.StoreOptions{})
	if err != nil {
		return busView{}, err
	}
	key := sources.KeyFor("convoy-sectors", "cli")
	res, err := store.Poll(ctx, key, remote, convoyv1alpha1.GitRef{Branch: opts.branch})
	if err != nil {
		return busView{}, fmt.Errorf("reading %s of %s: %w", opts.branch, sources.RedactURL(opts.url), err)
	}
	if res.PromotionError != nil {
		return busView{}, res.PromotionError
	}
	fsys, err := store.Open(ctx, key, res.Revision.Commit)
	if err != nil {
		return busView{}, err
	}
	data, err := fs.ReadFile(fsys, opts.sectorMap)
	if err != nil {
		return busView{}, fmt.Errorf("the sector map %s at %s: %w", opts.sectorMap, res.Revision, err)
	}
	view := busView{records: map[string]promotion.Record{}}
	if view.sectors, err = promotion.ParseSectorMap(opts.sectorMap, data); err != nil {
		return busView{}, err
	}
	raw, err := store.PromotionRecords(key, promotion.MaxRecordBytes, nil)
	if err != nil {
		return busView{}, err
	}
	for path, data := range raw {
		rec, err := promotion.DecodeRecord(data)
		if err != nil {
			return busView{}, fmt.Errorf("%s%s: %w", sources.PromotionRefPrefix, path, err)
		}
		view.records[path] = rec
	}
	return view, nil
}

// printSectors prints one line per sector, management cluster and key.
func printSectors(out io.Writer, view busView, opts sectorsOptions) error {
	keys := view.keys(opts.key)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "SECTOR\tMANAGEMENT CLUSTER\tKEY\tCOMMIT\tSTATE\tPROGRESS\tSINCE")
	for _, s := range view.sectors.Sectors {
		for _, mc := range s.ManagementClusters {
			for _, k := range keys {
				_, _ = fmt.Fprintln(tw, strings.Join(sectorLine(view, s.Name, mc, k, opts.commit), "\t"))
			}
		}
	}
	return tw.Flush()
}

// keys returns the keys of the records, or only only when it is set.
func (v busView) keys(only string) []string {
	if only != "" {
		return []string{only}
	}
	seen := map[string]bool{}
	for _, r := range v.records {
		seen[r.Key] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sectorLine is one row of the table.
func sectorLine(view busView, sector, mc, key, commit string) []string {
	row := []string{sector, mc, key, "-", "not reported", "-", "-"}
	rec, ok := view.records[sector+"/"+mc+"/"+key]
	if !ok || len(rec.Commits) == 0 {
		return row
	}
	c := rec.Commits[0]
	if commit != "" {
		if c, ok = rec.Find(commit); !ok {
			row[3] = shortApprovedCommit(commit)
			return row
		}
	}
	row[3], row[4] = shortApprovedCommit(c.Commit), string(c.State)
	if c.Partitions > 0 || c.Clusters > 0 {
		row[5] = fmt.Sprintf("%d/%d partitions, %d/%d clusters", c.PartitionsDone, c.Partitions, c.ClustersDone, c.Clusters)
	}
	if !c.Since.IsZero() {
		row[6] = c.Since.UTC().Format(time.RFC3339)
	}
	return row
}
