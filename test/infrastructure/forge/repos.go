package forge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/go-git/go-billy/v5/memfs"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
)

// CreateRepo creates a repository of the administrator, with an initial commit on main.
func (f *Forge) CreateRepo(name string) (*gitea.Repository, error) {
	repo, _, err := f.Client.CreateRepo(gitea.CreateRepoOption{Name: name, AutoInit: true, DefaultBranch: "main",
		Readme: "Default"})
	if err != nil {
		return nil, fmt.Errorf("creating repository %s: %w", name, err)
	}
	return repo, nil
}

// CloneURL is the repository's HTTP URL.
func (f *Forge) CloneURL(repo *gitea.Repository) string { return repo.CloneURL }

// PushInput is one commit to push.
type PushInput struct {
	Repo *gitea.Repository
	// Branch receives the commit; when it does not exist yet it starts at Base.
	Branch string
	// Base is the branch a new Branch starts from; default main.
	Base string
	// Message is the commit message.
	Message string
	// Files are written (path → content); an empty content deletes the path.
	Files map[string]string
}

// Push commits in.Files on in.Branch and pushes it with go-git over HTTP with basic auth,
// returning the commit's hash.
func (f *Forge) Push(ctx context.Context, in PushInput) (string, error) {
	auth := &githttp.BasicAuth{Username: Admin, Password: f.Password}
	base := in.Base
	if base == "" {
		base = "main"
	}
	r, err := gogit.CloneContext(ctx, memory.NewStorage(), memfs.New(), &gogit.CloneOptions{URL: in.Repo.CloneURL, Auth: auth})
	if err != nil {
		return "", fmt.Errorf("cloning %s: %w", in.Repo.CloneURL, err)
	}
	wt, err := r.Worktree()
	if err != nil {
		return "", err
	}
	start := plumbing.NewRemoteReferenceName("origin", in.Branch)
	if _, err := r.Reference(start, true); err != nil {
		start = plumbing.NewRemoteReferenceName("origin", base)
	}
	ref, err := r.Reference(start, true)
	if err != nil {
		return "", fmt.Errorf("branch %s of %s: %w", base, in.Repo.FullName, err)
	}
	branch := plumbing.NewBranchReferenceName(in.Branch)
	checkout := &gogit.CheckoutOptions{Hash: ref.Hash(), Branch: branch, Create: true, Force: true}
	if _, err := r.Reference(branch, true); err == nil {
		checkout = &gogit.CheckoutOptions{Branch: branch, Force: true} // the clone's default branch
	}
	if err := wt.Checkout(checkout); err != nil {
		return "", err
	}
	if err := writeFiles(wt, in.Files); err != nil {
		return "", err
	}
	sig := &object.Signature{Name: Admin, Email: Admin + "@example.com", When: time.Now()}
	hash, err := wt.Commit(in.Message, &gogit.CommitOptions{Author: sig, AllowEmptyCommits: true})
	if err != nil {
		return "", err
	}
	spec := config.RefSpec(fmt.Sprintf("%s:%s", branch, branch))
	err = r.PushContext(ctx, &gogit.PushOptions{Auth: auth, RefSpecs: []config.RefSpec{spec}})
	if err != nil && !errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		return "", fmt.Errorf("pushing %s to %s: %w", in.Branch, in.Repo.FullName, err)
	}
	return hash.String(), nil
}

// writeFiles writes (or, for an empty content, removes) files in the work tree and stages
// them.
func writeFiles(wt *gogit.Worktree, files map[string]string) error {
	for path, content := range files {
		if content == "" {
			if _, err := wt.Remove(path); err != nil {
				return fmt.Errorf("removing %s: %w", path, err)
			}
			continue
		}
		file, err := wt.Filesystem.Create(path)
		if err != nil {
			return err
		}
		if _, err := file.Write([]byte(content)); err != nil {
			return err
		}
		if err := file.Close(); err != nil {
			return err
		}
		if _, err := wt.Add(path); err != nil {
			return err
		}
	}
	return nil
}

// OpenPullRequest opens a pull request from head into base.
func (f *Forge) OpenPullRequest(repo *gitea.Repository, head, base, title string) (*gitea.PullRequest, error) {
	pr, _, err := f.Client.CreatePullRequest(repo.Owner.UserName, repo.Name,
		gitea.CreatePullRequestOption{Head: head, Base: base, Title: title})
	if err != nil {
		return nil, fmt.Errorf("opening a pull request %s → %s: %w", head, base, err)
	}
	return pr, nil
}

// Comment posts body as a comment of the pull request, as a CI job does.
func (f *Forge) Comment(repo *gitea.Repository, pr *gitea.PullRequest, body string) (*gitea.Comment, error) {
	c, _, err := f.Client.CreateIssueComment(repo.Owner.UserName, repo.Name, pr.Index, gitea.CreateIssueCommentOption{Body: body})
	return c, err
}

// Comments lists the pull request's comments.
func (f *Forge) Comments(repo *gitea.Repository, pr *gitea.PullRequest) ([]*gitea.Comment, error) {
	cs, _, err := f.Client.ListIssueComments(repo.Owner.UserName, repo.Name, pr.Index, gitea.ListIssueCommentOptions{})
	return cs, err
}

// Merge merges the pull request with a merge commit and returns the merge commit's hash.
func (f *Forge) Merge(repo *gitea.Repository, pr *gitea.PullRequest) (string, error) {
	ok, _, err := f.Client.MergePullRequest(repo.Owner.UserName, repo.Name, pr.Index,
		gitea.MergePullRequestOption{Style: gitea.MergeStyleMerge, Title: pr.Title})
	if err != nil || !ok {
		return "", fmt.Errorf("merging pull request #%d: merged=%v: %w", pr.Index, ok, err)
	}
	merged, _, err := f.Client.GetPullRequest(repo.Owner.UserName, repo.Name, pr.Index)
	if err != nil {
		return "", err
	}
	if merged.MergedCommitID == nil {
		return "", fmt.Errorf("pull request #%d has no merge commit", pr.Index)
	}
	return *merged.MergedCommitID, nil
}

// AddPushWebhook adds a Gitea webhook that sends push events of branch to url, signed with
// secret (Gitea signs each delivery with HMAC-SHA256 of the body).
func (f *Forge) AddPushWebhook(repo *gitea.Repository, url, secret, branch string) (*gitea.Hook, error) {
	h, _, err := f.Client.CreateRepoHook(repo.Owner.UserName, repo.Name, gitea.CreateHookOption{
		Type: gitea.HookTypeGitea, Active: true, Events: []string{"push"}, BranchFilter: branch,
		Config: map[string]string{"url": url, "content_type": "json", "secret": secret},
	})
	if err != nil {
		return nil, fmt.Errorf("adding a webhook to %s: %w", url, err)
	}
	return h, nil
}

// Statuses lists the commit statuses of commit, newest first.
func (f *Forge) Statuses(repo *gitea.Repository, commit string) ([]*gitea.Status, error) {
	st, _, err := f.Client.ListStatuses(repo.Owner.UserName, repo.Name, commit, gitea.ListStatusesOption{})
	return st, err
}
