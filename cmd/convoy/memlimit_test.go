package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	. "github.com/onsi/gomega"
)

// writeCgroupFile writes a cgroup memory limit file under a temporary root.
func writeCgroupFile(t *testing.T, name, content string) string {
	t.Helper()
	root := t.TempDir()
	path := filepath.Join(root, name)
	NewWithT(t).Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
	NewWithT(t).Expect(os.WriteFile(path, []byte(content), 0o644)).To(Succeed())
	return root
}

func TestContainerMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		want                int64
	}{
		{name: "cgroup v2", file: "memory.max", content: "536870912\n", want: 536870912},
		{name: "cgroup v2 without a limit", file: "memory.max", content: "max\n"},
		{name: "cgroup v1", file: "memory/memory.limit_in_bytes", content: "268435456\n", want: 268435456},
		{name: "cgroup v1 without a limit", file: "memory/memory.limit_in_bytes", content: "9223372036854771712\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			limit, err := containerMemoryLimit(writeCgroupFile(t, tc.file, tc.content))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(limit).To(Equal(tc.want))
		})
	}
	t.Run("no cgroup files", func(t *testing.T) {
		limit, err := containerMemoryLimit(t.TempDir())
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Expect(limit).To(BeZero())
	})
	t.Run("garbage", func(t *testing.T) {
		_, err := containerMemoryLimit(writeCgroupFile(t, "memory.max", "lots"))
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring("memory.max")))
	})
}

func TestApplyMemoryLimitLeavesGOMEMLIMITAlone(t *testing.T) {
	g := NewWithT(t)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	root := writeCgroupFile(t, "memory.max", "1000000000\n")
	t.Setenv("GOMEMLIMIT", "")
	soft, err := applyMemoryLimit(root)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(soft).To(Equal(int64(900000000)))
	g.Expect(debug.SetMemoryLimit(-1)).To(Equal(int64(900000000)))

	t.Setenv("GOMEMLIMIT", "100MiB")
	soft, err = applyMemoryLimit(root)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(soft).To(BeZero(), "GOMEMLIMIT wins")
}
