package sources

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/convoy-gitops/convoy/api/v1alpha1"
)

// RevisionAnnotation is attached to GitSource events and carries the artifact revision.
const RevisionAnnotation = "convoy.dev/revision"

// negativeConditions are the GitSource's abnormal-true conditions that make Ready False.
var negativeConditions = []string{v1alpha1.FetchFailedCondition}

// metav1Now is the time stamped on a new artifact; tests may replace it.
var metav1Now = func() metav1.Time { return metav1.Now() }
