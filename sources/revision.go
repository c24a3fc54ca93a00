package sources

import (
	"fmt"
	"strings"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// revisionSeparator joins a ref and a commit in a revision string.
const revisionSeparator = "@"

// commitPrefix marks the hash algorithm of a commit in a revision string.
const commitPrefix = "sha1:"

// Revision is a resolved ref: the short ref name the user asked for (branch, tag, or the tag a
// semver range picked; empty for a commit ref) and the commit it points at.
type Revision struct {
	// Ref is the branch or tag name, without refs/heads/ or refs/tags/; empty for a commit.
	Ref string
	// Commit is the 40-hex SHA-1 of the commit.
	Commit string
}

// String returns FormatRevision(r.Ref, r.Commit).
func (r Revision) String() string { return FormatRevision(r.Ref, r.Commit) }

// FormatRevision is the one function that formats revisions, everywhere in convoy:
// "<ref>@sha1:<commit>", or "sha1:<commit>" when ref is empty (a pinned commit).
func FormatRevision(ref, commit string) string {
	if ref == "" {
		return commitPrefix + commit
	}
	return ref + revisionSeparator + commitPrefix + commit
}

// ParseRevision parses what FormatRevision produces. The ref may itself contain "@"; the
// commit must be 40 lower-case hex digits.
func ParseRevision(s string) (Revision, error) {
	ref, hash := "", s
	if i := strings.LastIndex(s, revisionSeparator+commitPrefix); i >= 0 {
		ref, hash = s[:i], s[i+len(revisionSeparator):]
		if err := ValidateRefName(ref); err != nil {
			return Revision{}, fmt.Errorf("revision %q: %w", s, err)
		}
	}
	commit, ok := strings.CutPrefix(hash, commitPrefix)
	if !ok || !IsCommitHash(commit) {
		return Revision{}, fmt.Errorf("revision %q: want <ref>@sha1:<40 hex> or sha1:<40 hex>", s)
	}
	return Revision{Ref: ref, Commit: commit}, nil
}

// IsCommitHash reports whether s is a full lower-case hex SHA-1.
func IsCommitHash(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ValidateRefName checks a short branch or tag name with git's check-ref-format rules.
func ValidateRefName(name string) error {
	switch {
	case name == "" || name == "@":
		return fmt.Errorf("invalid ref name %q", name)
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.HasSuffix(name, "."):
		return fmt.Errorf("invalid ref name %q: bad start or end", name)
	case strings.Contains(name, "..") || strings.Contains(name, "@{") || strings.Contains(name, "//"):
		return fmt.Errorf("invalid ref name %q: forbidden sequence", name)
	}
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return fmt.Errorf("invalid ref name %q: bad component %q", name, part)
		}
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f || strings.ContainsRune(" ~^:?*[\\", c) {
			return fmt.Errorf("invalid ref name %q: forbidden character %q", name, c)
		}
	}
	return nil
}

// refKind is which field of a GitRef is set.
type refKind int

const (
	refBranch refKind = iota
	refTag
	refSemVer
	refCommit
)

// refOf returns which kind of ref spec asks for and its value, checking the value.
func refOf(spec convoyv1alpha1.GitRef) (refKind, string, error) {
	switch {
	case spec.Commit != "":
		if !IsCommitHash(spec.Commit) {
			return refCommit, "", fmt.Errorf("ref.commit %q is not a 40-hex SHA-1", spec.Commit)
		}
		return refCommit, spec.Commit, nil
	case spec.SemVer != "":
		return refSemVer, spec.SemVer, nil
	case spec.Tag != "":
		return refTag, spec.Tag, ValidateRefName(spec.Tag)
	case spec.Branch != "":
		return refBranch, spec.Branch, ValidateRefName(spec.Branch)
	}
	return refBranch, "", fmt.Errorf("ref: one of branch, tag, semver or commit must be set")
}
