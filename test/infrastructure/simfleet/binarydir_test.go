package simfleet_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

func TestFindBinaryDirHonoursTheEnvironment(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	t.Setenv(simfleet.BinaryDirEnv, dir)
	_, err := simfleet.FindBinaryDir()
	g.Expect(err).To(MatchError(And(ContainSubstring("kube-apiserver not found in "+dir),
		ContainSubstring(simfleet.BinaryDirEnv))), "a missing binary is named, with the way to fix it")

	g.Expect(os.WriteFile(filepath.Join(dir, "kube-apiserver"), nil, 0o755)).To(Succeed())
	_, err = simfleet.FindBinaryDir()
	g.Expect(err).To(MatchError(ContainSubstring("etcd not found in " + dir)))

	g.Expect(os.WriteFile(filepath.Join(dir, "etcd"), nil, 0o755)).To(Succeed())
	g.Expect(simfleet.FindBinaryDir()).To(Equal(dir))
}

func TestRepositoryRootIsTheFolderOfConvoysGoMod(t *testing.T) {
	g := NewWithT(t)
	want, err := filepath.Abs(filepath.Join("..", "..", ".."))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(simfleet.RepositoryRoot()).To(Equal(want))
}

func TestRepositoryRootSkipsOtherModules(t *testing.T) {
	g := NewWithT(t)
	want, err := filepath.Abs(filepath.Join("..", "..", ".."))
	g.Expect(err).NotTo(HaveOccurred())
	t.Chdir(filepath.Join(want, "test", "tools", "etcd")) // inside the tools module
	g.Expect(simfleet.RepositoryRoot()).To(Equal(want))

	t.Chdir(t.TempDir())
	_, err = simfleet.RepositoryRoot()
	g.Expect(err).To(MatchError(ContainSubstring("no convoy repository")))
}
