//! Where a [`super::PgFrontier`] keeps its two connections and their prepared statements
//! ([`Conns`]): in its [`Link`], lent whole to a batch from the batch's first statement to its
//! end, or with a commit running behind the crawl loop on a thread of its own
//! ([`Link::commit_behind`]).
//!
//! A crawler's round ends with a commit of a few statements (its visits, links, responses and
//! shared rows: tens of milliseconds of the database's time, more with round trips between
//! machines) during which its loop, which waited for it, started no request. Committed behind,
//! the loop goes on gathering and dispatching the next round's requests meanwhile. Nothing it
//! reads can run ahead of the commit: every use of the connections, a reader's statement as a
//! batch's, waits for the commit running to end first, so each statement sees what the one
//! before it wrote, as when the commit was waited for. A commit that failed is reported by the
//! next batch's first statement or by [`Link::settle`] (the end of a run, the frontier's drop),
//! once; the crawl then fails as it would have at the commit itself.

use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard};
use std::thread::JoinHandle;

use super::batch::Prepared;
use super::{Conn, Result};

/// A frontier's connections: the one for its transactions and reads, and the side one for rows
/// any crawler may create (see `batch.rs`), each with the statements prepared on it.
pub(super) struct Conns {
    pub conn: Conn,
    pub statements: Prepared,
    pub side: Conn,
    pub side_statements: Prepared,
}

/// What a commit run behind gives back: the connections, and whether it committed.
type Behind = JoinHandle<(Option<Conns>, Result<()>)>;

/// A commit to run behind the crawl loop.
type Job = Box<dyn FnOnce() -> (Option<Conns>, Result<()>) + Send>;

/// A frontier's [`Conns`], wherever they are.
pub(super) struct Link {
    slot: Mutex<Slot>,
}

#[derive(Default)]
struct Slot {
    /// Here, unless a batch or a commit holds them.
    conns: Option<Conns>,
    /// The commit running behind the crawl loop, if any.
    committing: Option<Behind>,
    /// What the last commit run behind failed with, until it is reported.
    failed: Option<super::FrontierError>,
}

impl Slot {
    /// Waits for the commit running behind, if any, and takes the connections back, keeping
    /// its failure to report.
    fn finish(&mut self) {
        let Some(handle) = self.committing.take() else {
            return;
        };
        // Callers run inside `blocking`: the crawl loop has left the runtime already.
        let returned = handle
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        self.returned(returned);
    }

    /// Takes back what a commit gave back: the connections, and its failure to report.
    fn returned(&mut self, (conns, result): (Option<Conns>, Result<()>)) {
        if conns.is_some() {
            self.conns = conns;
        }
        if let Err(e) = result {
            self.failed.get_or_insert(e);
        }
    }

    /// The failure kept, reported once.
    fn report(&mut self) -> Result<()> {
        match self.failed.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for Link {
    /// A commit still running behind is waited for: its connections go back to the pool
    /// with it, and a failure nobody asked about is logged.
    fn drop(&mut self) {
        let slot = self.slot.get_mut().unwrap_or_else(|p| p.into_inner());
        slot.finish();
        if let Err(e) = slot.report() {
            tracing::warn!(error = %e, "a commit behind the crawl loop failed");
        }
    }
}

/// The main connection of a frontier, for a reader's statements, held while this lives.
pub(super) struct ConnGuard<'a>(MutexGuard<'a, Slot>);

impl Deref for ConnGuard<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        &self.0.conns.as_ref().expect(LENT).conn
    }
}

impl DerefMut for ConnGuard<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        &mut self.0.conns.as_mut().expect(LENT).conn
    }
}

impl ConnGuard<'_> {
    /// The connection and the statements prepared on it.
    pub fn with_statements(&mut self) -> (&mut Conn, &mut super::batch::Prepared) {
        let conns = self.0.conns.as_mut().expect(LENT);
        (&mut conns.conn, &mut conns.statements)
    }
}

/// Why the connections are always here when a reader asks: a batch that holds them borrows
/// the frontier mutably for its whole life, and a commit behind is waited for first.
const LENT: &str = "a frontier's connections are lent only to a batch, which borrows it whole";

impl Link {
    pub fn new(conns: Conns) -> Link {
        Link {
            slot: Mutex::new(Slot {
                conns: Some(conns),
                ..Slot::default()
            }),
        }
    }

    /// A link holding nothing, for a batch committed behind, which gives its connections back
    /// to it.
    pub fn detached() -> Link {
        Link {
            slot: Mutex::new(Slot::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Slot> {
        // A panic elsewhere cannot have left the slot half-changed: each change is one move.
        self.slot
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The main connection, once a commit running behind has ended (a failure it met is
    /// reported by the next [`Link::take`] or [`Link::settle`]).
    pub fn conn(&self) -> ConnGuard<'_> {
        let mut slot = self.lock();
        slot.finish();
        ConnGuard(slot)
    }

    /// The connections, for a batch, once a commit running behind has ended; its failure, if
    /// it failed.
    pub fn take(&self) -> Result<Conns> {
        let mut slot = self.lock();
        slot.finish();
        slot.report()?;
        Ok(slot.conns.take().expect(LENT))
    }

    /// Gives the connections back.
    pub fn put(&self, conns: Conns) {
        self.lock().conns = Some(conns);
    }

    /// The connections a batch committed behind gave back.
    pub fn into_conns(mut self) -> Option<Conns> {
        self.slot
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .conns
            .take()
    }

    /// Runs `commit`, which holds the connections (taken by a batch), on a thread of its own;
    /// what needs them next waits for it. Where no thread can be started, it runs here.
    pub fn commit_behind(
        &self,
        commit: impl FnOnce() -> (Option<Conns>, Result<()>) + Send + 'static,
    ) -> Result<()> {
        let mut slot = self.lock();
        slot.finish();
        // The thread is started before it is given the commit, so that a thread that cannot
        // be started leaves the commit (and the connections it holds) here.
        let (give, job) = std::sync::mpsc::sync_channel::<Job>(1);
        let started = std::thread::Builder::new()
            .name("geode-commit".into())
            .spawn(move || match job.recv() {
                Ok(commit) => commit(),
                Err(_) => (None, Ok(())),
            });
        let commit: Job = Box::new(commit);
        let left = match started {
            Ok(handle) => match give.send(commit) {
                Ok(()) => {
                    slot.committing = Some(handle);
                    return Ok(());
                }
                Err(std::sync::mpsc::SendError(commit)) => commit,
            },
            Err(e) => {
                tracing::warn!(error = %e, "no thread for a commit: committing in the crawl loop");
                commit
            }
        };
        slot.returned(left());
        slot.report()
    }

    /// Whether a commit is still running behind.
    pub fn committing(&self) -> bool {
        self.lock()
            .committing
            .as_ref()
            .is_some_and(|handle| !handle.is_finished())
    }

    /// Waits for a commit running behind, and reports its failure.
    pub fn settle(&self) -> Result<()> {
        let mut slot = self.lock();
        slot.finish();
        slot.report()
    }
}
