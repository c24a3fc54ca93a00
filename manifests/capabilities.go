package manifests

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
)

// APIVersions is the set of API versions a cluster serves, as a chart sees it in
// .Capabilities.APIVersions: each group/version ("v1" for the core group) and each
// group/version/Kind. It is immutable; its digest, computed once, is what render cache keys
// hold of it (a cluster serves hundreds of them).
type APIVersions struct {
	versions []string
	digest   string
}

// NewAPIVersions returns the set of versions (duplicates and empty strings dropped).
func NewAPIVersions(versions []string) *APIVersions {
	out := slices.DeleteFunc(slices.Clone(versions), func(v string) bool { return strings.TrimSpace(v) == "" })
	slices.Sort(out)
	out = slices.Compact(out)
	sum := sha256.Sum256([]byte(strings.Join(out, "\n")))
	return &APIVersions{versions: out, digest: hex.EncodeToString(sum[:])}
}

// DefaultAPIVersionsWith returns Helm's built-in set of Kubernetes API versions (what `helm
// template` assumes without a cluster) with extra added, as `helm template --api-versions`
// adds them: what `convoy render --api-versions` renders charts with.
func DefaultAPIVersionsWith(extra []string) *APIVersions {
	return NewAPIVersions(append(slices.Clone([]string(common.DefaultVersionSet)), extra...))
}

// List returns the versions, sorted; the caller must not change it.
func (a *APIVersions) List() []string {
	if a == nil {
		return nil
	}
	return a.versions
}

// Digest is the SHA-256 of the sorted set; "" for nil (Helm's built-in set).
func (a *APIVersions) Digest() string {
	if a == nil {
		return ""
	}
	return a.digest
}

// Has reports whether the set holds v, as .Capabilities.APIVersions.Has does.
func (a *APIVersions) Has(v string) bool {
	_, ok := slices.BinarySearch(a.List(), v)
	return ok
}
