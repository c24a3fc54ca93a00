package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/test/docstest"
)

// repositoryRoot is the root of the checkout, seen from this package.
const repositoryRoot = "../.."

var (
	// shBlock matches a fenced sh block of a Markdown page, indented or not.
	shBlock = regexp.MustCompile("(?ms)^ *```sh\n(.*?)^ *```")
	// makeTarget matches a target of the Makefile.
	makeTarget = regexp.MustCompile(`(?m)^([a-zA-Z0-9_-]+):`)
	// shellWord matches one word of a command line: quoted, or up to a blank.
	shellWord = regexp.MustCompile(`(?:"[^"]*"|'[^']*'|[^\s"'])+`)
)

// shownCommand is a command line shown in an sh block of a page.
type shownCommand struct {
	page string
	args []string
}

// TestDocsShowOnlyCommandsThatExist reads every `make` and `convoy` line of the sh blocks of
// README.md, DEVELOPMENT.md and docs/ (the generated reference aside): each make line names
// targets of the Makefile, and each convoy line names a command and flags that convoy has.
func TestDocsShowOnlyCommandsThatExist(t *testing.T) {
	targets := makefileTargets(t)
	commands := docCommands(t)
	NewWithT(t).Expect(commands).NotTo(BeEmpty())
	for _, c := range commands {
		t.Run(c.page+": "+strings.Join(c.args, " "), func(t *testing.T) {
			g := NewWithT(t)
			switch c.args[0] {
			case "make":
				for _, word := range c.args[1:] {
					if !strings.Contains(word, "=") && !strings.HasPrefix(word, "-") {
						g.Expect(targets).To(ContainElement(word), "make has no target %s", word)
					}
				}
			case "convoy":
				root := newRootCmd()
				cmd, rest, err := root.Find(c.args[1:])
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(cmd).NotTo(BeIdenticalTo(root), "no convoy command is named")
				g.Expect(cmd.ParseFlags(rest)).To(Succeed())
			}
		})
	}
}

// TestDocsOfflineCommandsRun runs, from the repository root as a reader would, every convoy line
// of the docs that needs no cluster: render, validate, and diff between directories or
// revisions. Each must succeed, or exit 1 for a diff that finds a difference.
func TestDocsOfflineCommandsRun(t *testing.T) {
	commands := docCommands(t)
	t.Chdir(repositoryRoot)
	ran := 0
	for _, c := range commands {
		if !isOffline(c.args) {
			continue
		}
		ran++
		t.Run(c.page+": "+strings.Join(c.args, " "), func(t *testing.T) {
			g := NewWithT(t)
			args := expandGlobs(t, c.args[1:])
			_, stderr, err := runCLI(args...)
			if c.args[1] == "diff" && err != nil {
				g.Expect(exitCode(err)).To(Equal(1), "convoy diff failed: %s", stderr)
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), "stderr: %s", stderr)
		})
	}
	NewWithT(t).Expect(ran).To(BeNumerically(">", 0), "no offline command is shown")
}

// isOffline tells whether a convoy command line runs without a cluster.
func isOffline(args []string) bool {
	if len(args) < 2 || args[0] != "convoy" {
		return false
	}
	live := slices.ContainsFunc(args, func(a string) bool {
		name, _, _ := strings.Cut(a, "=")
		return slices.Contains([]string{"--package", "--hosted-cluster-package", "--kubeconfig", "--url"}, name)
	})
	return !live && slices.Contains([]string{"render", "validate", "diff"}, args[1])
}

// expandGlobs expands the shell patterns among args as sh would: a pattern ending in / matches
// folders only, and a pattern that matches nothing stays as it is.
func expandGlobs(t *testing.T, args []string) []string {
	t.Helper()
	var out []string
	for _, a := range args {
		if !strings.ContainsAny(a, "*?[") {
			out = append(out, a)
			continue
		}
		pattern, dirOnly := strings.CutSuffix(a, "/")
		matches, err := filepath.Glob(pattern)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		if len(matches) == 0 {
			out = append(out, a)
			continue
		}
		for _, m := range matches {
			if info, err := os.Stat(m); dirOnly && (err != nil || !info.IsDir()) {
				continue
			}
			if dirOnly {
				m += "/"
			}
			out = append(out, m)
		}
	}
	return out
}

// makefileTargets returns the targets the Makefile defines.
func makefileTargets(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repositoryRoot, "Makefile"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var targets []string
	for _, m := range makeTarget.FindAllStringSubmatch(string(raw), -1) {
		targets = append(targets, m[1])
	}
	return targets
}

// docCommands returns the make and convoy lines of the sh blocks of the pages.
func docCommands(t *testing.T) []shownCommand {
	t.Helper()
	var commands []shownCommand
	for _, page := range commandPages(t) {
		raw, err := os.ReadFile(filepath.Join(repositoryRoot, page))
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		for _, block := range shBlock.FindAllStringSubmatch(string(raw), -1) {
			for _, line := range commandLines(block[1]) {
				args := splitWords(line)
				if len(args) > 0 && (args[0] == "make" || args[0] == "convoy") {
					commands = append(commands, shownCommand{page: page, args: args})
				}
			}
		}
	}
	return commands
}

// commandPages returns the pages of docstest.Pages and DEVELOPMENT.md.
func commandPages(t *testing.T) []string {
	t.Helper()
	pages, err := docstest.Pages(repositoryRoot, "DEVELOPMENT.md")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return pages
}

// commandLines returns the commands of an sh block: continuation lines joined, comments and
// blank lines dropped.
func commandLines(block string) []string {
	var lines []string
	var current bytes.Buffer
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			current.WriteString(cont + " ")
			continue
		}
		current.WriteString(line)
		command := strings.TrimSpace(stripComment(current.String()))
		current.Reset()
		if command != "" {
			lines = append(lines, command)
		}
	}
	return lines
}

// stripComment cuts a shell comment: a # at the start or after a blank.
func stripComment(line string) string {
	if strings.HasPrefix(line, "#") {
		return ""
	}
	if i := strings.Index(line, " #"); i >= 0 {
		return line[:i]
	}
	return line
}

// splitWords splits a command line into words as sh would for the simple lines the docs show:
// blanks separate words, and quotes group them and are removed.
func splitWords(line string) []string {
	var words []string
	for _, w := range shellWord.FindAllString(line, -1) {
		words = append(words, strings.NewReplacer(`"`, "", "'", "").Replace(w))
	}
	return words
}
