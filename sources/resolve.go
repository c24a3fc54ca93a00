package sources

import (
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/go-git/go-git/v5/plumbing"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
)

const (
	headsPrefix  = "refs/heads/"
	tagsPrefix   = "refs/tags/"
	peeledSuffix = "^{}"
)

// target is what a ref spec resolved to on the remote.
type target struct {
	rev Revision
	// refName is the full ref to fetch; empty for a commit ref.
	refName string
}

// resolveRef picks the commit that spec points at among the advertised refs. Annotated tags
// are peeled to their commit.
func resolveRef(spec convoyv1alpha1.GitRef, refs []*plumbing.Reference) (target, error) {
	kind, value, err := refOf(spec)
	if err != nil {
		return target{}, pass.Stallf(convoyv1alpha1.InvalidSpecReason, "%w", err)
	}
	hashes := make(map[string]string, len(refs))
	for _, r := range refs {
		if r.Type() == plumbing.HashReference {
			hashes[r.Name().String()] = r.Hash().String()
		}
	}
	switch kind {
	case refCommit:
		return target{rev: Revision{Commit: value}}, nil
	case refBranch:
		if h, ok := hashes[headsPrefix+value]; ok {
			return target{rev: Revision{Ref: value, Commit: h}, refName: headsPrefix + value}, nil
		}
		return target{}, &RefNotFoundError{Ref: fmt.Sprintf("branch %q", value), Empty: len(hashes) == 0}
	case refTag:
		if h, ok := peeledTag(hashes, value); ok {
			return target{rev: Revision{Ref: value, Commit: h}, refName: tagsPrefix + value}, nil
		}
		return target{}, &RefNotFoundError{Ref: fmt.Sprintf("tag %q", value), Empty: len(hashes) == 0}
	}
	return resolveSemVer(value, hashes)
}

// peeledTag returns the commit of tag name: the peeled entry for an annotated tag.
func peeledTag(hashes map[string]string, name string) (string, bool) {
	if h, ok := hashes[tagsPrefix+name+peeledSuffix]; ok {
		return h, true
	}
	h, ok := hashes[tagsPrefix+name]
	return h, ok
}

// resolveSemVer picks the tag with the highest version matching the range. Among tags of
// equal version ("v1.0.0" and "1.0.0") the lexically greatest name wins, for determinism.
func resolveSemVer(rangeSpec string, hashes map[string]string) (target, error) {
	c, err := semver.NewConstraint(rangeSpec)
	if err != nil {
		return target{}, pass.Stallf(convoyv1alpha1.InvalidSpecReason, "ref.semver %q: %w", rangeSpec, err)
	}
	names := make([]string, 0, len(hashes))
	for name := range hashes {
		names = append(names, name)
	}
	sort.Strings(names)
	var (
		best    *semver.Version
		bestTag string
	)
	for _, name := range names {
		tag, ok := strings.CutPrefix(name, tagsPrefix)
		if !ok || strings.HasSuffix(tag, peeledSuffix) {
			continue
		}
		v, err := semver.NewVersion(tag)
		if err != nil || !c.Check(v) {
			continue
		}
		if best == nil || !v.LessThan(best) {
			best, bestTag = v, tag
		}
	}
	if best == nil {
		return target{}, &RefNotFoundError{Ref: fmt.Sprintf("no tag matching semver %q", rangeSpec), Empty: len(hashes) == 0}
	}
	h, _ := peeledTag(hashes, bestTag)
	return target{rev: Revision{Ref: bestTag, Commit: h}, refName: tagsPrefix + bestTag}, nil
}
