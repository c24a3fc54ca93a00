package sourcecontroller

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/sources"
)

// negativeConditions are the GitSource's abnormal-true conditions that make Ready False.
var negativeConditions = []string{convoyv1alpha1.FetchFailedCondition}

// metav1Now is the time stamped on a new artifact; tests may replace it.
var metav1Now = func() metav1.Time { return metav1.Now() }

// setArtifact records rev as the artifact and reports whether it is new; lastUpdateTime only
// moves when the revision changes, so an unchanged poll leaves the status as it was.
func setArtifact(obj *convoyv1alpha1.GitSource, rev sources.Revision) bool {
	if a := obj.Status.Artifact; a != nil && a.Revision == rev.String() {
		return false
	}
	obj.Status.Artifact = &convoyv1alpha1.Artifact{Revision: rev.String(), Commit: rev.Commit, LastUpdateTime: metav1Now()}
	return true
}

// markFetchFailed sets FetchFailed=True with the reason and message of err, and returns err.
func markFetchFailed(obj *convoyv1alpha1.GitSource, err error) error {
	pass.MarkTrue(obj, convoyv1alpha1.FetchFailedCondition, pass.ReasonOf(err), "%s", err.Error())
	return err
}
