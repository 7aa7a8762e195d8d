package e2e

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-github/v74/github"
)

// ghAnswer is the HTTP answer of a go-github call that returns a value.
func ghAnswer[T any](_ T, r *github.Response, err error) (*http.Response, error) {
	return ghAnswerOnly(r, err)
}

// ghAnswerOnly is the HTTP answer of a go-github call that returns none.
// GitHub's 202 Accepted (a job scheduled) is a success, which go-github
// reports as an *AcceptedError.
func ghAnswerOnly(r *github.Response, err error) (*http.Response, error) {
	if _, ok := errors.AsType[*github.AcceptedError](err); ok {
		err = nil
	}
	if r == nil {
		return nil, err
	}
	return r.Response, err
}

// githubWrites are go-github's writes across issues, labels, milestones,
// releases and their assets (uploaded to uploads.github.com), contents,
// pull requests and reviews, git data, reactions, deployments, hooks,
// Actions, gists and the user: each with arguments GitHub's description
// accepts, each on a path of its own. (Adding labels to an issue is left
// out: Prism cannot match go-github's body, a bare array, to the
// description's oneOf of five shapes.)
func githubWrites(gh *github.Client, asset string) []sdkWrite {
	const o, r = "octocat", "hello-world"
	const sha = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
	str := github.Ptr[string]
	w := func(name string, call func(context.Context) (*http.Response, error)) sdkWrite {
		return sdkWrite{name: name, call: call}
	}
	return []sdkWrite{
		w("Issues.Create", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Issues.Create(ctx, o, r, &github.IssueRequest{Title: str("Checkout fails for EUR"), Body: str("Steps: pay in EUR.")}))
		}),
		w("Issues.Edit", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Issues.Edit(ctx, o, r, 1, &github.IssueRequest{State: str("closed")}))
		}),
		w("Issues.Lock", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Issues.Lock(ctx, o, r, 2, &github.LockIssueOptions{LockReason: "resolved"}))
		}),
		w("Issues.Unlock", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Issues.Unlock(ctx, o, r, 3))
		}),
		w("Issues.AddAssignees", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Issues.AddAssignees(ctx, o, r, 4, []string{"hubot"}))
		}),
		w("Issues.RemoveAssignees", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Issues.RemoveAssignees(ctx, o, r, 5, []string{"hubot"}))
		}),
		w("Issues.CreateComment", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Issues.CreateComment(ctx, o, r, 6, &github.IssueComment{Body: str("Retrying the refund.")}))
		}),
		w("Issues.EditComment", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Issues.EditComment(ctx, o, r, 11, &github.IssueComment{Body: str("Refund retried.")}))
		}),
		w("Issues.DeleteComment", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Issues.DeleteComment(ctx, o, r, 12))
		}),
		w("Issues.CreateLabel", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Issues.CreateLabel(ctx, o, r, &github.Label{Name: str("payments"), Color: str("f29513")}))
		}),
		w("Issues.EditLabel", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Issues.EditLabel(ctx, o, r, "bug", &github.Label{Color: str("b01f26")}))
		}),
		w("Issues.DeleteLabel", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Issues.DeleteLabel(ctx, o, r, "wontfix"))
		}),
		w("Issues.RemoveLabelForIssue", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Issues.RemoveLabelForIssue(ctx, o, r, 9, "bug"))
		}),
		w("Issues.RemoveLabelsForIssue", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Issues.RemoveLabelsForIssue(ctx, o, r, 10))
		}),
		w("Issues.CreateMilestone", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Issues.CreateMilestone(ctx, o, r, &github.Milestone{Title: str("v1.0")}))
		}),
		w("Issues.EditMilestone", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Issues.EditMilestone(ctx, o, r, 1, &github.Milestone{State: str("closed")}))
		}),
		w("Issues.DeleteMilestone", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Issues.DeleteMilestone(ctx, o, r, 2))
		}),
		w("Reactions.CreateIssueReaction", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Reactions.CreateIssueReaction(ctx, o, r, 13, "+1"))
		}),
		w("Reactions.DeleteIssueReaction", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Reactions.DeleteIssueReaction(ctx, o, r, 14, 1))
		}),
		w("Reactions.CreateIssueCommentReaction", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Reactions.CreateIssueCommentReaction(ctx, o, r, 15, "heart"))
		}),
		w("Repositories.CreateRelease", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.CreateRelease(ctx, o, r, &github.RepositoryRelease{TagName: str("v1.0.0"), Name: str("v1.0.0")}))
		}),
		w("Repositories.EditRelease", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.EditRelease(ctx, o, r, 1, &github.RepositoryRelease{Body: str("Fixes EUR checkout.")}))
		}),
		w("Repositories.DeleteRelease", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Repositories.DeleteRelease(ctx, o, r, 2))
		}),
		w("Repositories.UploadReleaseAsset", func(ctx context.Context) (*http.Response, error) {
			f, err := os.Open(asset)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			return ghAnswer(gh.Repositories.UploadReleaseAsset(ctx, o, r, 3, &github.UploadOptions{Name: "checksums.txt", MediaType: "application/octet-stream"}, f))
		}),
		w("Repositories.EditReleaseAsset", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.EditReleaseAsset(ctx, o, r, 4, &github.ReleaseAsset{Label: str("Checksums")}))
		}),
		w("Repositories.DeleteReleaseAsset", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Repositories.DeleteReleaseAsset(ctx, o, r, 5))
		}),
		w("Reactions.CreateReleaseReaction", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Reactions.CreateReleaseReaction(ctx, o, r, 6, "rocket"))
		}),
		w("Repositories.CreateFile", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.CreateFile(ctx, o, r, "REFUNDS.md", &github.RepositoryContentFileOptions{
				Message: str("Document refunds"), Content: []byte("# Refunds\n")}))
		}),
		w("Repositories.UpdateFile", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.UpdateFile(ctx, o, r, "CHECKOUT.md", &github.RepositoryContentFileOptions{
				Message: str("Update checkout"), Content: []byte("# Checkout\n"), SHA: str(sha)}))
		}),
		w("Repositories.DeleteFile", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.DeleteFile(ctx, o, r, "OLD.md", &github.RepositoryContentFileOptions{
				Message: str("Remove old docs"), SHA: str(sha)}))
		}),
		w("PullRequests.Create", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.PullRequests.Create(ctx, o, r, &github.NewPullRequest{Title: str("Fix EUR checkout"), Head: str("fix-eur"), Base: str("main")}))
		}),
		w("PullRequests.Edit", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.PullRequests.Edit(ctx, o, r, 1, &github.PullRequest{Title: str("Fix EUR checkout (v2)")}))
		}),
		w("PullRequests.Merge", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.PullRequests.Merge(ctx, o, r, 2, "Fix EUR checkout", &github.PullRequestOptions{MergeMethod: "squash"}))
		}),
		w("PullRequests.UpdateBranch", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.PullRequests.UpdateBranch(ctx, o, r, 3, nil))
		}),
		w("PullRequests.RequestReviewers", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.PullRequests.RequestReviewers(ctx, o, r, 4, github.ReviewersRequest{Reviewers: []string{"hubot"}}))
		}),
		w("PullRequests.RemoveReviewers", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.PullRequests.RemoveReviewers(ctx, o, r, 5, github.ReviewersRequest{Reviewers: []string{"hubot"}}))
		}),
		w("PullRequests.CreateReview", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.PullRequests.CreateReview(ctx, o, r, 6, &github.PullRequestReviewRequest{Body: str("Looks good."), Event: str("COMMENT")}))
		}),
		w("PullRequests.SubmitReview", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.PullRequests.SubmitReview(ctx, o, r, 7, 80, &github.PullRequestReviewRequest{Body: str("Approved."), Event: str("APPROVE")}))
		}),
		w("PullRequests.DismissReview", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.PullRequests.DismissReview(ctx, o, r, 8, 81, &github.PullRequestReviewDismissalRequest{Message: str("Outdated.")}))
		}),
		w("PullRequests.DeletePendingReview", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.PullRequests.DeletePendingReview(ctx, o, r, 9, 82))
		}),
		w("PullRequests.CreateComment", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.PullRequests.CreateComment(ctx, o, r, 10, &github.PullRequestComment{
				Body: str("Why this rounding?"), CommitID: str(sha), Path: str("checkout.go"), Line: github.Ptr(12)}))
		}),
		w("PullRequests.EditComment", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.PullRequests.EditComment(ctx, o, r, 16, &github.PullRequestComment{Body: str("Why this rounding mode?")}))
		}),
		w("PullRequests.DeleteComment", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.PullRequests.DeleteComment(ctx, o, r, 17))
		}),
		w("Git.CreateBlob", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Git.CreateBlob(ctx, o, r, &github.Blob{Content: str("package checkout\n"), Encoding: str("utf-8")}))
		}),
		w("Git.CreateTree", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Git.CreateTree(ctx, o, r, sha, []*github.TreeEntry{{Path: str("checkout.go"), Mode: str("100644"), Type: str("blob"), Content: str("package checkout\n")}}))
		}),
		w("Git.CreateCommit", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Git.CreateCommit(ctx, o, r, &github.Commit{Message: str("Fix EUR rounding"), Tree: &github.Tree{SHA: str(sha)}}, nil))
		}),
		w("Git.CreateRef", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Git.CreateRef(ctx, o, r, &github.Reference{Ref: str("refs/fix-eur"), Object: &github.GitObject{SHA: str(sha)}}))
		}),
		w("Git.UpdateRef", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Git.UpdateRef(ctx, o, r, &github.Reference{Ref: str("refs/main"), Object: &github.GitObject{SHA: str(sha)}}, false))
		}),
		w("Git.DeleteRef", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Git.DeleteRef(ctx, o, r, "old-branch"))
		}),
		w("Git.CreateTag", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Git.CreateTag(ctx, o, r, &github.Tag{Tag: str("v1.0.0"), Message: str("Release v1.0.0"),
				Object: &github.GitObject{SHA: str(sha), Type: str("commit")}}))
		}),
		w("Repositories.CreateStatus", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.CreateStatus(ctx, o, r, sha, &github.RepoStatus{State: str("success"), Context: str("ci/test")}))
		}),
		w("Repositories.CreateComment", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.CreateComment(ctx, o, r, "7638417db6d59f3c431d3e1f261cc637155684cd", &github.RepositoryComment{Body: str("Nice fix.")}))
		}),
		w("Repositories.CreateDeployment", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.CreateDeployment(ctx, o, r, &github.DeploymentRequest{Ref: str("main"), Environment: str("production")}))
		}),
		w("Repositories.CreateDeploymentStatus", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.CreateDeploymentStatus(ctx, o, r, 42, &github.DeploymentStatusRequest{State: str("success")}))
		}),
		w("Repositories.CreateHook", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.CreateHook(ctx, o, r, &github.Hook{Events: []string{"push"},
				Config: &github.HookConfig{URL: str("https://example.com/hooks"), ContentType: str("json")}}))
		}),
		w("Repositories.EditHook", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.EditHook(ctx, o, r, 1, &github.Hook{Active: github.Ptr(false)}))
		}),
		w("Repositories.DeleteHook", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Repositories.DeleteHook(ctx, o, r, 2))
		}),
		w("Repositories.CreateKey", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.CreateKey(ctx, o, r, &github.Key{Title: str("deploy"), Key: str("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAbc deploy")}))
		}),
		w("Repositories.DeleteKey", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Repositories.DeleteKey(ctx, o, r, 3))
		}),
		w("Repositories.AddCollaborator", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.AddCollaborator(ctx, o, r, "hubot", &github.RepositoryAddCollaboratorOptions{Permission: "push"}))
		}),
		w("Repositories.RemoveCollaborator", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Repositories.RemoveCollaborator(ctx, o, r, "monalisa"))
		}),
		w("Repositories.ReplaceAllTopics", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.ReplaceAllTopics(ctx, o, r, []string{"payments", "go"}))
		}),
		w("Repositories.Dispatch", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.Dispatch(ctx, o, r, github.DispatchRequestOptions{EventType: "deploy"}))
		}),
		w("Repositories.Merge", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.Merge(ctx, o, r, &github.RepositoryMergeRequest{Base: str("main"), Head: str("fix-eur")}))
		}),
		w("Repositories.CreateFork", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.CreateFork(ctx, o, r, &github.RepositoryCreateForkOptions{}))
		}),
		w("Repositories.Create", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.Create(ctx, "", &github.Repository{Name: str("payments")}))
		}),
		w("Repositories.Edit", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.Edit(ctx, o, "payments", &github.Repository{Description: str("Payments service")}))
		}),
		w("Repositories.Delete", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Repositories.Delete(ctx, o, "old-payments"))
		}),
		w("Repositories.RenameBranch", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Repositories.RenameBranch(ctx, o, r, "master", "main"))
		}),
		w("Repositories.EnableVulnerabilityAlerts", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Repositories.EnableVulnerabilityAlerts(ctx, o, r))
		}),
		w("Actions.CreateWorkflowDispatchEventByFileName", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Actions.CreateWorkflowDispatchEventByFileName(ctx, o, r, "deploy.yml", github.CreateWorkflowDispatchEventRequest{Ref: "main"}))
		}),
		w("Actions.RerunWorkflowByID", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Actions.RerunWorkflowByID(ctx, o, r, 30433642))
		}),
		w("Actions.CancelWorkflowRunByID", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Actions.CancelWorkflowRunByID(ctx, o, r, 30433643))
		}),
		w("Actions.CreateRepoVariable", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Actions.CreateRepoVariable(ctx, o, r, &github.ActionsVariable{Name: "REGION", Value: "eu-west-1"}))
		}),
		w("Actions.DeleteRepoVariable", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Actions.DeleteRepoVariable(ctx, o, r, "OLD_REGION"))
		}),
		w("Checks.CreateCheckRun", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Checks.CreateCheckRun(ctx, o, r, github.CreateCheckRunOptions{Name: "lint", HeadSHA: sha}))
		}),
		w("Gists.Create", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Gists.Create(ctx, &github.Gist{Public: github.Ptr(false),
				Files: map[github.GistFilename]github.GistFile{"notes.md": {Content: str("Refund notes")}}}))
		}),
		w("Gists.Edit", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Gists.Edit(ctx, "aa5a315d61ae9438b18d", &github.Gist{Description: str("Refund notes")}))
		}),
		w("Gists.Delete", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Gists.Delete(ctx, "bb5a315d61ae9438b18d"))
		}),
		w("Gists.CreateComment", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Gists.CreateComment(ctx, "cc5a315d61ae9438b18d", &github.GistComment{Body: str("Thanks.")}))
		}),
		w("Activity.Star", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Activity.Star(ctx, "octo-org", "payments"))
		}),
		w("Activity.Unstar", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Activity.Unstar(ctx, "octo-org", "legacy"))
		}),
		w("Users.Follow", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Users.Follow(ctx, "hubot"))
		}),
		w("Users.Unfollow", func(ctx context.Context) (*http.Response, error) {
			return ghAnswerOnly(gh.Users.Unfollow(ctx, "monalisa"))
		}),
		w("Users.CreateKey", func(ctx context.Context) (*http.Response, error) {
			return ghAnswer(gh.Users.CreateKey(ctx, &github.Key{Title: str("laptop"), Key: str("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAbc laptop")}))
		}),
	}
}

// githubFronts are two TLS fronts before one Prism serving GitHub's own
// description: api.github.com and uploads.github.com.
type githubFronts struct{ api, uploads *mockFront }

func newGitHubFronts(t *testing.T, prism string) githubFronts {
	f := githubFronts{api: newMockFront(t, prism, true), uploads: newMockFront(t, prism, true)}
	// GitHub's description gives its answers as application/json, and
	// Prism refuses (406) the v3 media type go-github asks for.
	adapt := func(r *http.Request) {
		if strings.Contains(r.Header.Get("Accept"), "application/vnd.github") {
			r.Header.Set("Accept", "application/json")
		}
	}
	f.api.adapt, f.uploads.adapt = adapt, adapt
	return f
}

func (f githubFronts) writes() int { return f.api.writeCount() + f.uploads.writeCount() }

// githubThrough is go-github through toolguard p, its API and upload URLs
// at the fronts.
func githubThrough(t *testing.T, p *proc, f githubFronts) *github.Client {
	t.Helper()
	// It trusts the fronts too, as clients trust GitHub's certificate,
	// for the hosts toolguard does not intercept but tunnels.
	gh, err := github.NewClient(clientTrusting(t, p, f.api.Server)).WithAuthToken("ghp_test").WithEnterpriseURLs(f.api.URL+"/", f.uploads.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	// WithEnterpriseURLs adds /api/v3/ and /api/uploads/; GitHub serves
	// both at the root of their hosts.
	gh.BaseURL.Path, gh.UploadURL.Path = "/", "/"
	return gh
}

// go-github, GitHub's official Go SDK, through the shipped GitHub pack
// against Prism serving GitHub's own OpenAPI description (@octokit/openapi):
// each of ~90 writes, release-asset uploads to uploads.github.com among
// them, is made twice with the same arguments and must reach GitHub once.
// A hold (approval required on create_issue) reaches go-github as the
// *github.ErrorResponse it decodes, and nothing reaches GitHub.
func TestPackGitHubSDK(t *testing.T) {
	mock := startPrism(t, githubOpenAPI)
	fronts := newGitHubFronts(t, mock)
	pack := packAt(t, "github", "https", map[string]string{"api.github.com": fronts.api.host(), "uploads.github.com": fronts.uploads.host()})
	start := func(t *testing.T, rules string) *proc {
		s := newSetup(t, map[string]string{"github.yaml": rules})
		// Tunnels may reach the uploads front's port, as they may reach
		// uploads.github.com:443 by default.
		_, uploadsPort, _ := strings.Cut(fronts.uploads.host(), ":")
		s.args = append(s.args, "--config", writeConfig(t, s.dir, "upstream:\n  ca_file: "+(&upstream{Server: fronts.api.Server}).caPEM(t, s.dir)+
			"\n  connect_ports: [443, "+uploadsPort+"]\n"))
		return s.start(t)
	}
	asset := filepath.Join(t.TempDir(), "checksums.txt")
	if err := os.WriteFile(asset, []byte("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  app.tar.gz\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("each write twice", func(t *testing.T) {
		gh := githubThrough(t, start(t, pack), fronts)
		checkOnceEach(t, "GitHub", callTwice(t, githubWrites(gh, asset), fronts.writes))
	})

	t.Run("hold", func(t *testing.T) {
		gh := githubThrough(t, start(t, requireApproval(t, pack, "create_issue")), fronts)
		before := fronts.api.count("POST /repos/octocat/held/issues")
		_, resp, err := gh.Issues.Create(context.Background(), "octocat", "held", &github.IssueRequest{Title: github.Ptr("Refund order 78")})
		var ghErr *github.ErrorResponse
		if !errors.As(err, &ghErr) || ghErr.Response.StatusCode != http.StatusConflict {
			t.Fatalf("error = %#v, want a decoded *github.ErrorResponse, 409", err)
		}
		if ghErr.Message == "" {
			t.Logf("the hold reaches go-github without a message (%q): the pack declares no errors envelope with GitHub's message field", err)
		}
		if resp.Header.Get("Toolguard-Key") == "" {
			t.Errorf("the hold carries no Toolguard-Key")
		}
		if n := fronts.api.count("POST /repos/octocat/held/issues") - before; n != 0 {
			t.Errorf("held issue creations that reached GitHub = %d, want 0", n)
		}
	})
}
