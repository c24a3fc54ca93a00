package commitstatus

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestWithScopeNamesTheSectorAndTheManagementCluster(t *testing.T) {
	g := NewWithT(t)
	st := NewStatus(Target{TargetURL: "https://dash/{name}"}, "addon", "abc", Pending, "")
	g.Expect(st.WithScope("", "", "addon").Context).To(Equal("convoy/addon"))
	scoped := st.WithScope("canary", "mc-1", "addon")
	g.Expect(scoped.Context).To(Equal("convoy/canary/mc-1/addon"))
	g.Expect(scoped.link(scoped.name())).To(Equal("https://dash/addon"))
}
