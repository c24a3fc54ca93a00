package forge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/convoy-gitops/convoy/test/infrastructure/process"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// giteaBinary is the binary's name in the binary folder.
const giteaBinary = "gitea"

// Binaries names the server Start runs, as a file of Options.BinaryDir: what must be built for
// it.
func Binaries() []string { return []string{giteaBinary} }

// giteaModuleDir is the helper module that pins Gitea, relative to the repository root.
const giteaModuleDir = "test/tools/forge/gitea"

// Admin is the administrator's user name; the repositories belong to it.
const Admin = "convoy"

// Options configure Start.
type Options struct {
	// BinaryDir holds bin/gitea; default $CONVOY_TEST_BINARIES, else the repository's bin/.
	BinaryDir string
	// StaticRoot is Gitea's STATIC_ROOT_PATH (templates/, options/); default the gitea
	// module's directory, from go list in test/tools/forge/gitea.
	StaticRoot string
	// StartTimeout bounds the wait until the API answers; default 60s.
	StartTimeout time.Duration
}

// Forge is a running Gitea.
type Forge struct {
	// URL is the server's root URL, e.g. http://127.0.0.1:40123 (the API is under /api/v1).
	URL string
	// Token is the administrator's access token (all scopes).
	Token string
	// Password is the administrator's password, for Git over HTTP.
	Password string
	// Client is the SDK's client, authenticated with Token.
	Client *gitea.Client
	// StartTime is how long Start took, migrations and user creation included.
	StartTime time.Duration

	dir  string
	proc *process.Process
}

// Start prepares a Gitea in a temporary folder (configuration, database, administrator,
// token), starts it on a free port and waits until its API answers.
func Start(ctx context.Context, opts Options) (*Forge, error) {
	began := time.Now()
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		f, err := startOnce(ctx, opts)
		switch {
		case err == nil:
			f.StartTime = time.Since(began)
			return f, nil
		case !errors.Is(err, process.ErrExitedEarly) || attempt == 3:
			return nil, err
		}
	}
}

func (o Options) withDefaults() (Options, error) {
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	root, err := simfleet.RepositoryRoot()
	if err != nil {
		return o, err
	}
	if o.BinaryDir == "" {
		o.BinaryDir = os.Getenv(simfleet.BinaryDirEnv)
	}
	if o.BinaryDir == "" {
		o.BinaryDir = filepath.Join(root, "bin")
	}
	if _, err := os.Stat(filepath.Join(o.BinaryDir, giteaBinary)); err != nil {
		return o, fmt.Errorf("gitea not found in %s: run `make tools` (or set %s)", o.BinaryDir, simfleet.BinaryDirEnv)
	}
	if o.StaticRoot == "" {
		o.StaticRoot, err = giteaModulePath(root)
	}
	return o, err
}

// giteaModulePath returns the gitea module's directory in the module cache.
func giteaModulePath(root string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "code.gitea.io/gitea")
	cmd.Dir = filepath.Join(root, giteaModuleDir)
	out, err := cmd.CombinedOutput()
	dir := strings.TrimSpace(string(out))
	if err != nil {
		return "", fmt.Errorf("finding the gitea module's directory (go list -m in %s): %w: %s", giteaModuleDir, err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "templates")); err != nil {
		return "", fmt.Errorf("the gitea module's directory %s has no templates/: %w", dir, err)
	}
	return dir, nil
}

func startOnce(ctx context.Context, opts Options) (_ *Forge, err error) {
	dir, err := os.MkdirTemp("", "convoy-forge-")
	if err != nil {
		return nil, err
	}
	f := &Forge{dir: dir, Password: randomHex(12)}
	defer func() {
		if err != nil {
			f.Stop()
		}
	}()
	ports, err := process.FreePorts(1)
	if err != nil {
		return nil, err
	}
	f.URL = "http://127.0.0.1:" + strconv.Itoa(ports[0])
	if err := writeConfig(dir, ports[0], opts.StaticRoot); err != nil {
		return nil, err
	}
	if err := f.prepare(ctx, opts.BinaryDir); err != nil {
		return nil, err
	}
	f.proc, err = process.Start(opts.BinaryDir, dir, giteaBinary, f.args("web"), nil)
	if err != nil {
		return nil, err
	}
	if err := f.waitReady(ctx, opts.StartTimeout); err != nil {
		return nil, err
	}
	// Note: the SDK gates calls on the server's version; a binary built without Gitea's
	// version stamp says "development", which it cannot compare.
	f.Client, err = gitea.NewClient(f.URL, gitea.SetToken(f.Token), gitea.SetContext(ctx), gitea.SetGiteaVersion(""))
	return f, err
}

// prepare migrates the database, creates the administrator and its token.
func (f *Forge) prepare(ctx context.Context, binDir string) error {
	if _, err := f.run(ctx, binDir, "migrate"); err != nil {
		return err
	}
	if _, err := f.run(ctx, binDir, "admin", "user", "create", "--username", Admin, "--password", f.Password,
		"--email", Admin+"@example.com", "--admin", "--must-change-password=false"); err != nil {
		return err
	}
	out, err := f.run(ctx, binDir, "admin", "user", "generate-access-token", "--username", Admin,
		"--token-name", "tests", "--scopes", "all", "--raw")
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	f.Token = strings.TrimSpace(lines[len(lines)-1])
	if len(f.Token) < 20 {
		return fmt.Errorf("gitea admin user generate-access-token printed no token: %q", out)
	}
	return nil
}

// run runs one gitea command on the configuration and returns its output.
func (f *Forge) run(ctx context.Context, binDir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, giteaBinary), f.args(args...)...)
	cmd.Dir = f.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("gitea %s: %w: %s", strings.Join(args[:min(len(args), 3)], " "), err, out)
	}
	return string(out), nil
}

func (f *Forge) args(args ...string) []string {
	return append([]string{"--config", filepath.Join(f.dir, "app.ini"), "--work-path", f.dir}, args...)
}

// waitReady polls the API's version endpoint until it answers.
func (f *Forge) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case <-f.proc.Exited():
			return f.proc.ExitError()
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.URL+"/api/v1/version", nil)
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gitea not ready at %s: %w; its last output:\n%s", f.URL, ctx.Err(), f.proc.Tail(20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop stops Gitea and removes its folder.
func (f *Forge) Stop() {
	f.proc.Stop(10 * time.Second)
	_ = os.RemoveAll(f.dir)
}

// Tail returns the last n lines of Gitea's log.
func (f *Forge) Tail(n int) string { return f.proc.Tail(n) }

// writeConfig writes app.ini: SQLite, HTTP on port, no SSH, no mail, no cron, webhooks to
// any host.
func writeConfig(dir string, port int, staticRoot string) error {
	u, err := user.Current()
	if err != nil {
		return err
	}
	ini := fmt.Sprintf(appINI, u.Username, dir, port, staticRoot, randomHex(32), randomHex(32))
	return os.WriteFile(filepath.Join(dir, "app.ini"), []byte(ini), 0o600)
}

const appINI = `APP_NAME = convoy test forge
RUN_MODE = prod
RUN_USER = %[1]s
WORK_PATH = %[2]s
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[3]d
ROOT_URL = http://127.0.0.1:%[3]d/
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
STATIC_ROOT_PATH = %[4]s
APP_DATA_PATH = %[2]s/data

[database]
DB_TYPE = sqlite3
PATH = %[2]s/gitea.db

[repository]
ROOT = %[2]s/repositories
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = %[5]s
INTERNAL_TOKEN = %[6]s

[service]
DISABLE_REGISTRATION = true

[webhook]
ALLOWED_HOST_LIST = *
DELIVER_TIMEOUT = 5

[log]
MODE = console
LEVEL = Warn
ROOT_PATH = %[2]s/log

[mailer]
ENABLED = false

[cron]
ENABLED = false

[cache]
ADAPTER = memory

[session]
PROVIDER = memory

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[actions]
ENABLED = false

[packages]
ENABLED = false
`

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
