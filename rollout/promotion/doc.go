// Package promotion decides which commit a HostedClusterPackage of one management cluster may
// roll out when other sectors must have run it first, from what every management cluster
// published on the bus. It is pure: it reads records, the sector map and the clock, and calls
// nothing.
//
// Sectors. A sector is a named group of management clusters (integration, staging, a
// production canary, production regions). Each controller is told its own management
// cluster's name and sector. Which management clusters make up each sector is declared in a
// sector map, a file of the package repository (ParseSectorMap), so that it is reviewed like
// any change and so that a management cluster that never reported counts as not done instead
// of being invisible.
//
// Records. For each HostedClusterPackage (matched across management clusters by its
// promotion key, by default its name) each management cluster publishes one Record: what it
// did with the newest commits it rolled out, newest first, at most MaxCommits of them. A
// commit is Progressing from its first pin, Completed once every partition is done after its
// last soak and checks, Failed when failures stopped its rollout, Rejected when a rollback
// rejected it, and Superseded when a newer commit replaced it before it completed. The record
// is the whole truth of its management cluster: a reader needs no history of its own.
//
// Buses. A record is read from the package repository's promotion refs (the default) or made
// from the upstream management clusters' commit statuses, one per commit, whose state and
// description say what the record would (the HostedClusterPackage controller builds it); Decide
// is the same for both.
//
// Rules, in the order Decide applies them (each one is tested):
//
//  1. A commit is promoted into the sector when, for every upstream sector of spec.promotion.after,
//     every management cluster the sector map lists for it has a record in which the commit is
//     Completed, and its completion is at least that upstream's soak ago. One management
//     cluster that has not reported, or reported another state, keeps the commit out.
//  2. A commit that any management cluster of an upstream sector Failed or Rejected is
//     withdrawn: it is never promoted, whatever the others did, and a sector that already
//     runs it stops there (the rollout's Promotion gate, and a rollback under a Rollback
//     failure policy).
//  3. A commit promoted by hand (a ManualPromotion naming the rollout's UID, the commit and the sector) is
//     promoted without its upstream, withdrawn or not, and only that commit: the person who
//     promotes an emergency fix decides.
//  4. Of the promoted commits, the sector rolls out the newest that the GitSource fetched: the
//     first in the history walked from the GitSource's head. A commit superseded upstream
//     before it completed is never promoted, so the sector goes straight to the newest
//     promoted one. The walk stops at the commit the sector rolls out now: a sector never
//     moves back to an older commit by promotion, even when its own is withdrawn (it stops,
//     or rolls back to its completed revision under a Rollback policy).
//  5. The bus must be read whole: a sector map that cannot be read or is invalid, a record
//     that is malformed or names another management cluster, or a bus that could not be
//     reached holds promotion. Holding never promotes and changes nothing the sector runs.
package promotion
