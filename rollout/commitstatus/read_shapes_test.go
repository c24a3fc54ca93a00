package commitstatus

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestDecodeStatusesOfEachForge reads the answers as each forge documents them: GitHub's
// combined status (state, updated_at, total_count), Gitea's (status), GitLab's array (status,
// name, finished_at), each state mapped to convoy's, other tools' contexts left out.
func TestDecodeStatusesOfEachForge(t *testing.T) {
	at := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		provider, body string
		want           []Observed
		// held is how many statuses the page holds; total, what its body says of all pages.
		held, total int
	}{{
		provider: "github",
		body: `{"state":"failure","sha":"abc","total_count":3,"statuses":[
			{"state":"success","context":"convoy/canary/mc-1/addon","description":"Completed: 1/1","created_at":"2026-12-02T06:00:00Z","updated_at":"2026-12-02T07:00:00Z"},
			{"state":"error","context":"convoy/canary/mc-2/addon","description":"Superseded","updated_at":"2026-12-02T07:00:00Z"},
			{"state":"failure","context":"ci","description":"x","updated_at":"2026-12-02T07:00:00Z"}]}`,
		want: []Observed{{Context: "convoy/canary/mc-1/addon", State: Success, Description: "Completed: 1/1", At: at},
			{Context: "convoy/canary/mc-2/addon", State: Superseded, Description: "Superseded", At: at}},
		held: 3, total: 3,
	}, {
		provider: "gitea",
		body: `{"state":"pending","statuses":[
			{"status":"pending","context":"convoy/eu/mc-3/addon","description":"0/2","created_at":"2026-12-02T06:00:00Z","updated_at":"2026-12-02T07:00:00Z"},
			{"status":"warning","context":"convoy/eu/mc-4/addon","description":"Superseded","updated_at":"2026-12-02T07:00:00Z"}]}`,
		want: []Observed{{Context: "convoy/eu/mc-3/addon", State: Pending, Description: "0/2", At: at},
			{Context: "convoy/eu/mc-4/addon", State: Superseded, Description: "Superseded", At: at}},
		held: 2, total: -1,
	}, {
		provider: "gitlab",
		body: `[{"status":"running","name":"convoy/us/mc-5/addon","description":"1/2","created_at":"2026-12-02T07:00:00Z"},
			{"status":"failed","name":"convoy/us/mc-6/addon","description":"Rejected: 0/2","created_at":"2026-12-02T06:00:00Z","finished_at":"2026-12-02T07:00:00Z"},
			{"status":"canceled","name":"convoy/us/mc-7/addon","description":"","created_at":"2026-12-02T07:00:00Z"},
			{"status":"skipped","name":"other","description":"","created_at":"2026-12-02T07:00:00Z"}]`,
		want: []Observed{{Context: "convoy/us/mc-5/addon", State: Pending, Description: "1/2", At: at},
			{Context: "convoy/us/mc-6/addon", State: Failure, Description: "Rejected: 0/2", At: at},
			{Context: "convoy/us/mc-7/addon", State: Superseded, At: at}},
		held: 4, total: -1,
	}} {
		t.Run(tc.provider, func(t *testing.T) {
			g := NewWithT(t)
			got, n, total, err := decodeStatuses(tc.provider, strings.NewReader(tc.body))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n).To(Equal(tc.held))
			g.Expect(total).To(Equal(tc.total))
			g.Expect(got).To(Equal(tc.want), "only convoy's contexts are kept")
		})
	}
}

// TestStatusesURLIsEachForgesDocumentedEndpoint: the latest status per context, paged.
func TestStatusesURLIsEachForgesDocumentedEndpoint(t *testing.T) {
	commit := strings.Repeat("a", 40)
	for provider, want := range map[string]string{
		"github": "https://api.github.com/repos/org/addons/commits/" + commit + "/status?page=2&per_page=100",
		"gitea":  "https://gitea.example.com/api/v1/repos/org/addons/commits/" + commit + "/status?limit=50&page=2",
		"gitlab": "https://gitlab.com/api/v4/projects/org%2Faddons/repository/commits/" + commit + "/statuses?page=2&per_page=100",
	} {
		t.Run(provider, func(t *testing.T) {
			g := NewWithT(t)
			target := Target{Provider: provider, Repository: "org/addons"}
			if provider == "gitea" {
				target.APIURL = "https://gitea.example.com"
			}
			u, err := statusesURL(target, commit, false, 2)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(u.String()).To(Equal(want))
		})
	}
}

// TestNewestPerContextKeepsTheLastChange: GitLab keeps a latest status per pipeline, so one
// commit may answer a context twice; the one the forge changed last counts.
func TestNewestPerContextKeepsTheLastChange(t *testing.T) {
	g := NewWithT(t)
	at := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	got := newestPerContext([]Observed{
		{Context: "convoy/us/mc-5/addon", State: Success, Description: "Completed: old", At: at},
		{Context: "convoy/us/mc-6/addon", State: Pending, At: at},
		{Context: "convoy/us/mc-5/addon", State: Pending, Description: "restarted", At: at.Add(time.Minute)},
		{Context: "convoy/us/mc-5/addon", State: Failure, Description: "older still", At: at.Add(-time.Minute)},
	})
	g.Expect(got).To(Equal([]Observed{
		{Context: "convoy/us/mc-5/addon", State: Pending, Description: "restarted", At: at.Add(time.Minute)},
		{Context: "convoy/us/mc-6/addon", State: Pending, At: at}}))
}

// TestDescriptionsAndContextsStayBounded: a forge's long descriptions are cut as convoy cuts
// its own, and a context longer than any convoy posts is left out.
func TestDescriptionsAndContextsStayBounded(t *testing.T) {
	g := NewWithT(t)
	long := strings.Repeat("x", 10_000)
	body := `{"total_count":2,"statuses":[{"state":"success","context":"convoy/a/b/c","description":"` + long + `"},` +
		`{"state":"success","context":"convoy/` + long + `","description":"d"}]}`
	got, n, _, err := decodeStatuses("github", strings.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(2))
	g.Expect(got).To(HaveLen(1))
	g.Expect([]rune(got[0].Description)).To(HaveLen(maxDescription))
}
