package sources

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

const hashA = "0123456789abcdef0123456789abcdef01234567"

func TestFormatAndParseRevision(t *testing.T) {
	cases := []struct {
		in      string
		want    Revision
		wantErr bool
	}{
		{in: "main@sha1:" + hashA, want: Revision{Ref: "main", Commit: hashA}},
		{in: "v1.2.3@sha1:" + hashA, want: Revision{Ref: "v1.2.3", Commit: hashA}},
		{in: "feature/x@y@sha1:" + hashA, want: Revision{Ref: "feature/x@y", Commit: hashA}},
		{in: "sha1:" + hashA, want: Revision{Commit: hashA}},
		{in: "main@sha1:" + strings.ToUpper(hashA), wantErr: true},
		{in: "main@sha1:abc", wantErr: true},
		{in: "main/" + hashA, wantErr: true},
		{in: "a..b@sha1:" + hashA, wantErr: true},
		{in: "@sha1:" + hashA, wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseRevision(tc.in)
			if tc.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
			g.Expect(got.String()).To(Equal(tc.in))
		})
	}
}

func TestValidateRefName(t *testing.T) {
	for name, ok := range map[string]bool{
		"main": true, "feature/x": true, "v1.0.0": true, "release-1.2": true,
		"": false, "@": false, "/main": false, "main/": false, "a..b": false, "a b": false,
		"x.lock": false, ".hidden": false, "a/.b": false, "a@{1}": false, "a~1": false, "a:b": false, "end.": false,
	} {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(ValidateRefName(name) == nil).To(Equal(ok))
		})
	}
}

// FuzzParseRevision checks that parsing never panics, that whatever parses formats back to
// the same string, and that every valid ref round-trips through FormatRevision.
func FuzzParseRevision(f *testing.F) {
	for _, s := range []string{"main@sha1:" + hashA, "sha1:" + hashA, "a@b@sha1:" + hashA, "x@sha1:", "@sha1:@sha1:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rev, err := ParseRevision(s)
		if err == nil && rev.String() != s {
			t.Fatalf("ParseRevision(%q) = %+v, formats back to %q", s, rev, rev.String())
		}
		if ValidateRefName(s) == nil {
			back, err := ParseRevision(FormatRevision(s, hashA))
			if err != nil || back != (Revision{Ref: s, Commit: hashA}) {
				t.Fatalf("ref %q does not round-trip: %+v, %v", s, back, err)
			}
		}
	})
}
