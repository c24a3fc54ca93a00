package sourcecontroller

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/sources"
)

func TestReconcileArtifactLogsEachNewCommitOnce(t *testing.T) {
	g := NewWithT(t)
	var lines []string
	ctx := logr.NewContext(context.Background(), funcr.New(func(prefix, args string) {
		lines = append(lines, args)
	}, funcr.Options{}))
	one, two := strings.Repeat("1", 40), strings.Repeat("2", 40)
	s := &scope{obj: &convoyv1alpha1.GitSource{}}
	r := &GitSourceReconciler{}

	for _, poll := range []sources.Revision{{Ref: "main", Commit: one}, {Ref: "main", Commit: one},
		{Ref: "main", Commit: two}, {Ref: "release", Commit: two}} {
		s.poll.Revision = poll
		g.Expect(r.reconcileArtifact(ctx, s)).To(Succeed())
	}
	g.Expect(lines).To(HaveExactElements(
		`"level"=0 "msg"="Fetched new commit" "commit"="`+one+`" "previousCommit"="" "ref"="main" "revision"="main@sha1:`+one+`"`,
		`"level"=0 "msg"="Fetched new commit" "commit"="`+two+`" "previousCommit"="`+one+`" "ref"="main" "revision"="main@sha1:`+two+`"`,
	), "a ref that moves to a commit already stored is no new commit")
	g.Expect(s.obj.Status.Artifact.Revision).To(Equal("release@sha1:" + two))
}
