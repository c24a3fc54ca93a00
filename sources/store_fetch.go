package sources

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// remoteName is the name of the remote in every stored repository.
const remoteName = "origin"

// mirrorRefSpecs fetch every branch and tag; used to find a commit that is not the tip of the
// followed ref.
var mirrorRefSpecs = []config.RefSpec{"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"}

// errCommitNotOnRemote: the remote does not give the commit.
var errCommitNotOnRemote = errors.New("not found on the remote")

// PollResult is the outcome of a poll.
type PollResult struct {
	// Revision the ref resolved to.
	Revision Revision
	// Fetched is true when objects were fetched; false when the commit was already stored.
	Fetched bool
	// PromotionRefs is the digest of the remote's promotion refs (PromotionRefPrefix), which
	// the poll brought into the store; "" when it has none, or the ref is a commit (no listing).
	PromotionRefs string
	// PromotionError says why the promotion refs could not be brought in; the poll of the
	// package content succeeded all the same.
	PromotionError error
}

// Poll resolves ref on the remote by listing its refs (an ls-remote: no objects are
// transferred), then fetches the resolved commit into the repository of key only if it is not
// stored yet. A commit ref is not listed at all when it is already stored. The credentials of
// remote never appear in the message of the error it returns.
func (s *Store) Poll(ctx context.Context, key Key, remote Remote, ref convoyv1alpha1.GitRef) (PollResult, error) {
	start := time.Now()
	res, err := s.poll(ctx, key, remote, ref)
	observePoll(key, start, res, err)
	res.PromotionError = remote.Redact(res.PromotionError)
	return res, remote.Redact(err)
}

// poll is Poll without the redaction of errors.
func (s *Store) poll(ctx context.Context, key Key, remote Remote, ref convoyv1alpha1.GitRef) (PollResult, error) {
	e := s.entry(key)
	if err := e.write.lock(ctx); err != nil {
		return PollResult{}, err
	}
	defer e.write.unlock()
	repo, err := s.ensureRepo(key, remote.URL)
	if err != nil {
		return PollResult{}, err
	}
	// Note: readers reopen the repository after the poll, to see the packs it added.
	defer e.reset(&remote)
	if ref.Commit != "" && hasCommit(repo, ref.Commit) {
		return PollResult{Revision: Revision{Commit: ref.Commit}}, nil
	}
	tgt, refs, err := resolveRemote(ctx, remote, ref)
	if err != nil {
		return PollResult{}, err
	}
	res := PollResult{Revision: tgt.rev}
	if !hasCommit(repo, tgt.rev.Commit) {
		if err := fetchCommit(ctx, repo, remote, tgt); err != nil {
			return PollResult{}, err
		}
		e.forgetMissing()
		res.Fetched = true
	}
	res.PromotionRefs, res.PromotionError = syncPromotionRefs(ctx, repo, remote, refs)
	return res, nil
}

// resolveRemote resolves ref on the remote and returns the refs it listed; a commit ref needs
// no listing.
func resolveRemote(ctx context.Context, remote Remote, ref convoyv1alpha1.GitRef) (target, []*plumbing.Reference, error) {
	if ref.Commit != "" {
		tgt, err := resolveRef(ref, nil)
		return tgt, nil, err
	}
	refs, err := listRemote(ctx, remote)
	if err != nil {
		return target{}, nil, err
	}
	tgt, err := resolveRef(ref, refs)
	return tgt, refs, err
}

// listRemote lists the remote's refs, with annotated tags peeled.
func listRemote(ctx context.Context, remote Remote) ([]*plumbing.Reference, error) {
	auth, err := remote.Auth.transportAuth(remote.URL)
	if err != nil {
		return nil, err
	}
	r := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: remoteName, URLs: []string{remote.URL}})
	refs, err := r.ListContext(ctx, &git.ListOptions{
		Auth: auth, CABundle: remote.Auth.caBundle(), PeelingOption: git.AppendPeeled,
	})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing remote refs: %w", err)
	}
	return refs, nil
}

// fetchCommit fetches tgt's ref; failing that (a commit ref, or the ref moved meanwhile) it
// fetches every branch and tag, then the commit by hash.
func fetchCommit(ctx context.Context, repo *git.Repository, remote Remote, tgt target) error {
	commit := tgt.rev.Commit
	if tgt.refName != "" {
		spec := config.RefSpec("+" + tgt.refName + ":" + tgt.refName)
		if err := fetch(ctx, repo, remote, spec); err != nil {
			return err
		}
		if hasCommit(repo, commit) {
			return nil
		}
	}
	if err := fetch(ctx, repo, remote, mirrorRefSpecs...); err != nil {
		return err
	}
	if hasCommit(repo, commit) {
		return nil
	}
	// Note: servers allow fetching an unadvertised commit only when it is reachable (GitHub,
	// GitLab, git with uploadpack.allowReachableSHA1InWant); the ref keeps it from ever being
	// pruned by a later `git gc` run by hand.
	spec := config.RefSpec(commit + ":refs/convoy/commits/" + commit)
	if err := fetch(ctx, repo, remote, spec); err != nil && unreachable(ctx, err) {
		return err
	}
	if !hasCommit(repo, commit) {
		return fmt.Errorf("commit %s: %w", commit, errCommitNotOnRemote)
	}
	return nil
}

// unreachable reports whether a fetch failed for want of an answer: its deadline or a
// cancellation, the network, an HTTP status or the credentials; not for a server that
// answered it does not have what was asked. Only the latter makes a commit missing: a missing
// commit is not looked for again for a while, and a rollout moves a Package that waits for one.
func unreachable(ctx context.Context, err error) bool {
	var netErr net.Error
	var urlErr *url.Error
	var unexpected *plumbing.UnexpectedError
	return ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.As(err, &netErr) || errors.As(err, &urlErr) || errors.As(err, &unexpected) ||
		errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed) ||
		errors.Is(err, transport.ErrRepositoryNotFound)
}

// fetch runs one fetch; "already up to date" is not an error.
func fetch(ctx context.Context, repo *git.Repository, remote Remote, specs ...config.RefSpec) error {
	auth, err := remote.Auth.transportAuth(remote.URL)
	if err != nil {
		return err
	}
	err = repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: remoteName, RefSpecs: specs, Auth: auth, CABundle: remote.Auth.caBundle(),
		Tags: git.NoTags, Force: true,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("fetching: %w", err)
	}
	return nil
}

// ensureRepo opens the repository of key, creating it, or re-creating it when the URL changed
// (its objects would belong to another repository).
func (s *Store) ensureRepo(key Key, url string) (*git.Repository, error) {
	dir := s.dir(key)
	repo, err := git.PlainOpen(dir)
	if err == nil {
		cfg, cerr := repo.Config()
		if rc, ok := cfgRemote(cfg, cerr); ok && len(rc.URLs) == 1 && rc.URLs[0] == url {
			return repo, nil
		}
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("resetting repository of %s: %w", key, err)
		}
	} else if !errors.Is(err, git.ErrRepositoryNotExists) {
		return nil, fmt.Errorf("opening repository of %s: %w", key, err)
	}
	repo, err = git.PlainInit(dir, true)
	if err != nil {
		return nil, fmt.Errorf("creating repository of %s: %w", key, err)
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: remoteName, URLs: []string{url}}); err != nil {
		return nil, fmt.Errorf("configuring repository of %s: %w", key, err)
	}
	return repo, nil
}

// cfgRemote returns the origin remote of a repository config.
func cfgRemote(cfg *config.Config, err error) (*config.RemoteConfig, bool) {
	if err != nil || cfg == nil {
		return nil, false
	}
	rc, ok := cfg.Remotes[remoteName]
	return rc, ok
}

// hasCommit reports whether commit is stored in repo.
func hasCommit(repo *git.Repository, commit string) bool {
	if !IsCommitHash(commit) {
		return false
	}
	_, err := repo.CommitObject(plumbing.NewHash(commit))
	return err == nil
}
