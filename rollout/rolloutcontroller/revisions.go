package rolloutcontroller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

// RolloutStartedAtAnnotation on a ControllerRevision records, in RFC 3339, when it last became
// the update revision; the rollout duration metric is measured from it.
const RolloutStartedAtAnnotation = "convoy.dev/rollout-started-at"

// hashLength is the number of hex digits of the revision hash in a ControllerRevision's name:
// 64 bits, so that nobody who pushes to Git can grind a commit whose revision takes the name of
// another. legacyHashLength is the 40 bits of the releases before, whose revisions a running
// rollout keeps using (adoptLegacyRevision).
const (
	hashLength       = 16
	legacyHashLength = 10
)

// revisionData is what a ControllerRevision stores: enough to rebuild the Package spec.
type revisionData struct {
	// Commit is the resolved Git commit.
	Commit string `json:"commit"`
	// Template is the Package spec without its revision.
	Template convoyv1alpha1.PackageTemplateSpec `json:"template"`
}

// storedRevision is a decoded ControllerRevision.
type storedRevision struct {
	obj *appsv1.ControllerRevision
	rev rollout.Revision
}

// newRevision returns the revision of (template, commit) of the HostedClusterPackage named
// hcpkg, with its canonical template and its name "<hcpkg>-<hash>", its data, and the name the
// releases before gave it (legacyHashLength digits of the hash).
func newRevision(hcpkg string, template convoyv1alpha1.PackageTemplateSpec, commit string) (rollout.Revision, []byte, string, error) {
	template, err := canonicalTemplate(template)
	if err != nil {
		return rollout.Revision{}, nil, "", err
	}
	data, err := json.Marshal(revisionData{Commit: commit, Template: template})
	if err != nil {
		return rollout.Revision{}, nil, "", err
	}
	digest := sha256.Sum256(data)
	sum := hex.EncodeToString(digest[:])
	return rollout.Revision{Name: revisionName(hcpkg, sum[:hashLength]), Commit: commit, Template: template}, data,
		revisionName(hcpkg, sum[:legacyHashLength]), nil
}

// revisionName returns "<hcpkg>-<hash>", shortening the prefix to fit a name.
func revisionName(hcpkg, hash string) string {
	if maxPrefix := 253 - len(hash) - 1; len(hcpkg) > maxPrefix {
		hcpkg = hcpkg[:maxPrefix]
	}
	return hcpkg + "-" + hash
}

// canonicalTemplate rewrites the template's config as compact JSON with sorted keys, the form
// the API server returns, so that a revision read back from a ControllerRevision matches the
// spec of the Packages made from it.
func canonicalTemplate(t convoyv1alpha1.PackageTemplateSpec) (convoyv1alpha1.PackageTemplateSpec, error) {
	if t.Config == nil || len(t.Config.Raw) == 0 {
		return t, nil
	}
	var v any
	if err := json.Unmarshal(t.Config.Raw, &v); err != nil {
		return t, fmt.Errorf("decoding the template's config: %w", err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return t, err
	}
	t.Config = &runtime.RawExtension{Raw: raw}
	return t, nil
}

// decodeRevision reads a ControllerRevision.
func decodeRevision(cr *appsv1.ControllerRevision) (storedRevision, error) {
	var d revisionData
	if err := json.Unmarshal(cr.Data.Raw, &d); err != nil {
		return storedRevision{}, fmt.Errorf("decoding ControllerRevision %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	template, err := canonicalTemplate(d.Template)
	if err != nil {
		return storedRevision{}, err
	}
	return storedRevision{obj: cr, rev: rollout.Revision{Name: cr.Name, Commit: d.Commit, Number: cr.Revision, Template: template,
		Rejected: isRejected(cr), CreatedAt: cr.CreationTimestamp.Time}}, nil
}

// isRejected reports whether a rollback rejected the revision of cr: it carries
// rollout.RejectedAnnotation, whatever its value.
func isRejected(cr *appsv1.ControllerRevision) bool {
	_, ok := cr.Annotations[rollout.RejectedAnnotation]
	return ok
}

// listRevisions returns the ControllerRevisions the HostedClusterPackage owns, in all
// namespaces, oldest (lowest .revision) first. Undecodable ones are skipped: pruning removes
// them.
func (r *HostedClusterPackageReconciler) listRevisions(ctx context.Context, hcpkg *convoyv1alpha1.HostedClusterPackage) ([]storedRevision, error) {
	list := &appsv1.ControllerRevisionList{}
	if err := r.Client.List(ctx, list, client.MatchingLabels{convoyv1alpha1.HostedClusterPackageLabel: hcpkg.Name}); err != nil {
		return nil, fmt.Errorf("listing ControllerRevisions: %w", err)
	}
	var out []storedRevision
	for i := range list.Items {
		cr := &list.Items[i]
		if !metav1.IsControlledBy(cr, hcpkg) {
			continue
		}
		sr, err := decodeRevision(cr)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Ignoring an undecodable ControllerRevision")
			sr = storedRevision{obj: cr}
		}
		out = append(out, sr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].obj.Revision < out[j].obj.Revision })
	return out, nil
}

// ensureRevision returns the stored update revision, creating its ControllerRevision in
// namespace (with the next .revision number) or, when an older revision comes back, renumbering
// it as the newest; a revision a rollback rejected comes back rejected (s.update.Rejected).
func (r *HostedClusterPackageReconciler) ensureRevision(ctx context.Context, s *scope, namespace string, data []byte) error {
	adoptLegacyRevision(s)
	next := int64(1)
	for _, sr := range s.revisions {
		next = max(next, sr.obj.Revision+1)
		if sr.obj.Name == s.update.Name {
			if sr.rev.Commit != s.update.Commit {
				return fmt.Errorf("ControllerRevision %s holds commit %s, not %s: hash collision", sr.obj.Name, sr.rev.Commit, s.update.Commit)
			}
			s.updateObj = sr.obj
			s.update.Rejected = sr.rev.Rejected
			s.update.CreatedAt = sr.obj.CreationTimestamp.Time
		}
	}
	if s.updateObj != nil {
		err := r.renumberRevision(ctx, s.updateObj, next, s.now)
		s.update.Number = s.updateObj.Revision
		return err
	}
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: s.update.Name,
			Labels:      map[string]string{convoyv1alpha1.HostedClusterPackageLabel: s.obj.Name},
			Annotations: map[string]string{RolloutStartedAtAnnotation: rollout.FormatSpecUpdatedAt(s.now)}},
		Data:     runtime.RawExtension{Raw: data},
		Revision: next,
	}
	if err := controllerutil.SetControllerReference(s.obj, cr, r.Client.Scheme()); err != nil {
		return err
	}
	err := r.Client.Create(ctx, cr, client.FieldOwner(FieldOwner))
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("ControllerRevision %s/%s exists but is not in the cache yet: %w", namespace, cr.Name, err)
	}
	if err != nil {
		return fmt.Errorf("creating ControllerRevision %s/%s: %w", namespace, cr.Name, err)
	}
	r.event(s, corev1.EventTypeNormal, RevisionCreatedReason,
		"Created revision %s for commit %s", cr.Name, shortCommit(s.update.Commit))
	s.updateObj = cr
	s.update.Number = cr.Revision
	s.update.CreatedAt = cr.CreationTimestamp.Time
	s.revisions = append(s.revisions, storedRevision{obj: cr, rev: s.update})
	return nil
}

// adoptLegacyRevision names the update revision s.updateLegacy when the HostedClusterPackage
// owns a ControllerRevision of that name with the same commit and template: one a release
// before made with a shorter hash. A rollout in flight at an upgrade thus keeps its revision,
// its status and its approvals; the revisions of later commits get full names. A legacy name
// alone never adopts anything: its 40 bits can be ground, the commit and template cannot.
func adoptLegacyRevision(s *scope) {
	if s.updateLegacy == "" || s.updateLegacy == s.update.Name {
		return
	}
	for _, sr := range s.revisions {
		if sr.obj.Name == s.updateLegacy && sr.rev.Commit == s.update.Commit &&
			equality.Semantic.DeepEqual(sr.rev.Template, s.update.Template) {
			s.update.Name = s.updateLegacy
			return
		}
	}
}

// renumberRevision makes an existing revision that becomes the update revision again the
// newest, so that history pruning keeps it, and restarts its rollout clock.
func (r *HostedClusterPackageReconciler) renumberRevision(ctx context.Context, cr *appsv1.ControllerRevision, next int64, now time.Time) error {
	if cr.Revision == next-1 {
		return nil
	}
	patched := cr.DeepCopy()
	patched.Revision = next
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	patched.Annotations[RolloutStartedAtAnnotation] = rollout.FormatSpecUpdatedAt(now)
	if err := r.Client.Patch(ctx, patched, client.MergeFrom(cr), client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("renumbering ControllerRevision %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	*cr = *patched
	return nil
}

// revisionsToPrune returns the ControllerRevisions beyond limit that neither the update nor the
// current revision nor any Package uses, oldest first. revisions are sorted oldest first.
func revisionsToPrune(revisions []storedRevision, limit int, keep map[string]bool) []*appsv1.ControllerRevision {
	var history []*appsv1.ControllerRevision
	for _, sr := range revisions {
		if !keep[sr.obj.Name] {
			history = append(history, sr.obj)
		}
	}
	if len(history) <= limit {
		return nil
	}
	return history[:len(history)-limit]
}

// startedAt returns when the rollout of a ControllerRevision started, or its creation.
func startedAt(cr *appsv1.ControllerRevision) time.Time {
	if t, err := time.Parse(time.RFC3339, cr.Annotations[RolloutStartedAtAnnotation]); err == nil {
		return t
	}
	return cr.CreationTimestamp.Time
}

// shortCommit abbreviates a commit for messages.
func shortCommit(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
