//! Result diversity: no capsule takes more than a few places in any block of results while
//! others wait; the others move down, never out. Pure.

use std::collections::HashMap;

/// How many top results diversity reorders. Fixed, so that every page of results comes from the
/// same reordering and paging never repeats or skips a result.
pub(super) const DIVERSITY_WINDOW: usize = 1000;
/// How many top results a search ranks first, hoping they settle the page asked for (see
/// [`diversify_head`]); the whole window is ranked when they do not.
pub(super) const FIRST_WINDOW: usize = 100;
/// Results per block of [`BLOCK`] that one capsule may take while other capsules have
/// candidates.
pub(super) const PER_CAPSULE: usize = 2;
pub(super) const BLOCK: usize = 10;
/// A result of another capsule takes a waiting result's place only when it scores at least
/// this share of it.
const DIVERSITY_MIN_SHARE: f32 = 0.2;

/// Reorders `items` (best first) so that in every block of `block` results no capsule has more
/// than `cap` places while candidates of other capsules remain; a result that must wait keeps
/// its rank among the waiting ones and comes first in the next block. When only one capsule's
/// results remain, or the others score under [`DIVERSITY_MIN_SHARE`] of the best waiting one,
/// the waiting results fill the block in order. Every item appears exactly once.
pub(super) fn diversify<T: Clone>(
    items: &[T],
    capsule: impl Fn(&T) -> u64,
    score: impl Fn(&T) -> f32,
    cap: usize,
    block: usize,
) -> Vec<T> {
    // With every item given, the reordering never runs short.
    reorder(items, capsule, score, cap, block, None).unwrap_or_else(|| items.to_vec())
}

/// [`diversify`] of a list of which `head` holds only the best items: the first `settle`
/// results it gives are those of the whole list, or it gives `None` when placing one of them
/// needed an item past the head (it cannot tell whether the list has more: `None` also when the
/// head is the whole list and ran out).
///
/// The reordering only ever takes the next item of the list, so it goes exactly as over the whole
/// list until it asks for an item the head does not have.
pub(super) fn diversify_head<T: Clone>(
    head: &[T],
    capsule: impl Fn(&T) -> u64,
    score: impl Fn(&T) -> f32,
    cap: usize,
    block: usize,
    settle: usize,
) -> Option<Vec<T>> {
    reorder(head, capsule, score, cap, block, Some(settle))
}

fn reorder<T: Clone>(
    items: &[T],
    capsule: impl Fn(&T) -> u64,
    score: impl Fn(&T) -> f32,
    cap: usize,
    block: usize,
    settle: Option<usize>,
) -> Option<Vec<T>> {
    let mut out = Vec::with_capacity(items.len());
    let mut pending: std::collections::VecDeque<T> = items.iter().cloned().collect();
    while !pending.is_empty() {
        let mut taken = 0;
        let mut counts: HashMap<u64, usize> = HashMap::new();
        let mut waiting = Vec::new();
        while taken < block {
            let Some(item) = pending.pop_front() else {
                // The whole list would have had a next item here.
                if settle.is_some_and(|n| out.len() < n) {
                    return None;
                }
                break;
            };
            // Variety is not worth a much worse result: a strong page of a capsule that has had
            // its share beats a faint match elsewhere (a query naming a capsule wants its pages).
            if waiting
                .first()
                .is_some_and(|w| score(&item) < DIVERSITY_MIN_SHARE * score(w))
            {
                pending.push_front(item);
                break;
            }
            let count = counts.entry(capsule(&item)).or_default();
            if *count < cap {
                *count += 1;
                out.push(item);
                taken += 1;
            } else {
                waiting.push(item);
            }
        }
        // Not enough other capsules: the waiting results fill the block in rank order.
        let mut waiting = waiting.into_iter();
        while taken < block {
            let Some(item) = waiting.next() else { break };
            out.push(item);
            taken += 1;
        }
        for item in waiting.rev() {
            pending.push_front(item);
        }
        if settle.is_some_and(|n| out.len() >= n) {
            // What follows is not asked for: the rest of the head, unordered.
            out.extend(pending);
            return Some(out);
        }
    }
    // Every item placed, and still fewer than asked for: the next would be past the head.
    if settle.is_some_and(|n| out.len() < n) {
        return None;
    }
    Some(out)
}
