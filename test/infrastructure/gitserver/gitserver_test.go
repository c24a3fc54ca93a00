package gitserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func run(g Gomega, env []string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	return strings.TrimSpace(string(out))
}

func TestRepoAndHTTP(t *testing.T) {
	g := NewWithT(t)
	srv, err := New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	defer srv.Close()
	repo, err := srv.CreateRepo("addons")
	g.Expect(err).NotTo(HaveOccurred())
	c1, err := repo.Commit("main", "one", map[string]string{"a/b.txt": "hello"})
	g.Expect(err).NotTo(HaveOccurred())
	c2, err := repo.CommitFiles("main", "two", File{Path: "link", Content: "a/b.txt", Symlink: true},
		File{Path: "a/b.txt", Delete: true}, File{Path: "c.txt", Content: "c"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c1).NotTo(Equal(c2))
	tag, err := repo.AnnotatedTag("v1.0.0", c1, "one")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tag).NotTo(Equal(c1))

	srv.SetBasicAuth("user", "pass")
	base, err := srv.StartHTTP()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(srv.HTTPURL("addons")).To(Equal(base + "/addons.git"))
	u := strings.Replace(srv.HTTPURL("addons"), "http://", "http://user:pass@", 1)
	dst := filepath.Join(t.TempDir(), "clone")
	run(g, nil, "clone", "--quiet", "--bare", u, dst)
	g.Expect(run(g, nil, "--git-dir="+dst, "rev-parse", "main")).To(Equal(c2))
	st := srv.Stats()
	g.Expect(st.Advertisements).To(BeNumerically(">=", 1))
	g.Expect(st.UploadPacks).To(Equal(int64(1)))
	g.Expect(st.Bytes).To(BeNumerically(">", 0))

	// A fetch with nothing new makes no upload-pack negotiation.
	run(g, nil, "--git-dir="+dst, "fetch", "--quiet", u, "+refs/heads/*:refs/heads/*")
	g.Expect(srv.Stats().Sub(st).UploadPacks).To(BeZero())

	bad := strings.Replace(srv.HTTPURL("addons"), "http://", "http://user:wrong@", 1)
	cmd := exec.Command("git", "ls-remote", bad)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	g.Expect(cmd.Run()).To(HaveOccurred())
}

func TestSSHAndFile(t *testing.T) {
	g := NewWithT(t)
	srv, err := New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	defer srv.Close()
	repo, err := srv.CreateRepo("addons")
	g.Expect(err).NotTo(HaveOccurred())
	c1, err := repo.Commit("main", "one", map[string]string{"f": "x"})
	g.Expect(err).NotTo(HaveOccurred())

	_, err = srv.StartSSH()
	g.Expect(err).NotTo(HaveOccurred())
	key, err := NewClientKey()
	g.Expect(err).NotTo(HaveOccurred())
	srv.AuthorizeKey(key.Public)
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "id"), key.PrivatePEM, 0o600)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "kh"), srv.KnownHosts(), 0o600)).To(Succeed())
	sshCmd := "GIT_SSH_COMMAND=ssh -i " + filepath.Join(dir, "id") + " -o UserKnownHostsFile=" +
		filepath.Join(dir, "kh") + " -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes"
	if _, err := exec.LookPath("ssh"); err == nil {
		out := run(g, []string{sshCmd}, "ls-remote", srv.SSHURL("addons"), "refs/heads/main")
		g.Expect(out).To(HavePrefix(c1))
		g.Expect(srv.Stats().UploadPacks).To(Equal(int64(1)))
	}
	out := run(g, nil, "ls-remote", srv.FileURL("addons"), "refs/heads/main")
	g.Expect(out).To(HavePrefix(c1))
}
