package fleetview

import (
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

// storedRevision is the data of a revision's ControllerRevision. Two shapes are read:
// {"commit": ..., "template": <PackageTemplateSpec>} and a Package-like {"spec": <PackageSpec>}.
type storedRevision struct {
	Commit   string                              `json:"commit,omitempty"`
	Template *convoyv1alpha1.PackageTemplateSpec `json:"template,omitempty"`
	Spec     *convoyv1alpha1.PackageSpec         `json:"spec,omitempty"`
}

// EncodeRevision returns the ControllerRevision data of rev in the first shape DecodeRevision
// reads.
func EncodeRevision(rev rollout.Revision) ([]byte, error) {
	return json.Marshal(storedRevision{Commit: rev.Commit, Template: &rev.Template})
}

// DecodeRevision reads the revision a ControllerRevision stores, rejected when a rollback
// annotated it; ok is false when its data has neither shape.
func DecodeRevision(cr *appsv1.ControllerRevision) (rollout.Revision, bool) {
	raw := cr.Data.Raw
	if len(raw) == 0 {
		return rollout.Revision{}, false
	}
	var s storedRevision
	if err := json.Unmarshal(raw, &s); err != nil {
		return rollout.Revision{}, false
	}
	rev := rollout.Revision{Name: cr.Name, CreatedAt: cr.CreationTimestamp.Time}
	_, rev.Rejected = cr.Annotations[rollout.RejectedAnnotation]
	switch {
	case s.Commit != "" && s.Template != nil:
		rev.Commit, rev.Template = s.Commit, *s.Template
	case s.Spec != nil && s.Spec.Revision != "":
		rev.Commit, rev.Template = s.Spec.Revision, s.Spec.PackageTemplateSpec
	default:
		return rollout.Revision{}, false
	}
	return rev, true
}

// shortCommit abbreviates a commit to 12 characters.
func shortCommit(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
