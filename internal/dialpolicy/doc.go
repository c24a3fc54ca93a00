// Package dialpolicy says which addresses convoy's outgoing requests on behalf of a spec may
// connect to: the rollout checks (rollout/checks), the Helm chart repositories a package
// names (sources/helmrepo, in the controller and in convoy render, diff and validate) and the
// forges' commit status APIs a GitSource names (rollout/commitstatus). Whoever writes such a
// spec chooses the address, so by default none may reach a link-local address
// (169.254.0.0/16, fe80::/10) nor a cloud metadata endpoint (169.254.169.254, fd00:ec2::254,
// 100.100.100.200, and what metadata.google.internal resolves to): those hand out the node's
// cloud credentials to whoever asks from the node. The flag --allow-link-local-addresses
// (AllowLinkLocalFlag) of the controller and of those commands lifts the rule.
//
// The rule is enforced when connecting, not when a URL is read: Policy.Dialer resolves the
// host, refuses it when any of its addresses is refused, and connects to the very addresses it
// checked, each again checked by the net.Dialer's Control function at the socket. A name that
// resolves to an allowed address when a spec is read and to a metadata address when the
// request is sent (DNS rebinding) is therefore refused at that second resolution.
//
// Loopback and private addresses stay allowed: in-cluster Prometheus, Alertmanager and chart
// repositories live there, and the tests' servers listen on 127.0.0.1.
package dialpolicy
