//! jsdiff 8's `diffLines` (the `diff` npm package pi's edit tool uses), ported so that
//! `details.diff` aligns repeated lines exactly as pi does: Myers' O(ND) search with jsdiff's
//! choice between an insertion and a removal and its diagonal pruning. A general diff crate
//! finds equally short diffs but often a different one.

/// What a run of lines is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// In both texts.
    Equal,
    /// Only in the new text.
    Added,
    /// Only in the old text.
    Removed,
}

/// One jsdiff change object: a run of whole lines (each with its `\n`, except a last line
/// without one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part<'a> {
    /// Equal, added or removed.
    pub kind: Kind,
    /// The lines.
    pub lines: Vec<&'a str>,
}

#[derive(Debug, Clone, Copy)]
struct Component {
    count: usize,
    added: bool,
    removed: bool,
    prev: Option<usize>,
}

#[derive(Debug, Clone, Copy)]
struct PathState {
    old_pos: isize,
    last: Option<usize>,
}

/// `diffLines(old, new)` with default options.
pub fn diff_lines<'a>(old: &'a str, new: &'a str) -> Vec<Part<'a>> {
    let old_t: Vec<&str> = old.split_inclusive('\n').collect();
    let new_t: Vec<&str> = new.split_inclusive('\n').collect();
    let mut search = Search {
        old: &old_t,
        new: &new_t,
        arena: Vec::new(),
    };
    let last = search.run();
    search.build(last)
}

struct Search<'s, 'a> {
    old: &'s [&'a str],
    new: &'s [&'a str],
    /// Components of all paths; paths share their prefixes by index.
    arena: Vec<Component>,
}

impl<'a> Search<'_, 'a> {
    /// The last component of the first path that reaches the end of both texts.
    fn run(&mut self) -> Option<usize> {
        let (old_len, new_len) = (self.old.len() as isize, self.new.len() as isize);
        let max = old_len + new_len;
        let offset = max + 1;
        let mut best: Vec<Option<PathState>> = vec![None; (2 * max + 3) as usize];
        let slot = |d: isize| (d + offset) as usize;
        let mut start = PathState {
            old_pos: -1,
            last: None,
        };
        let new_pos = self.extract_common(&mut start, 0);
        if start.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
            return start.last;
        }
        best[slot(0)] = Some(start);
        let (mut min_diag, mut max_diag) = (isize::MIN / 4, isize::MAX / 4);
        for edit_length in 1..=max {
            let mut d = min_diag.max(-edit_length);
            while d <= max_diag.min(edit_length) {
                let remove_path = best[slot(d - 1)].take();
                let add_path = best[slot(d + 1)];
                let can_add = add_path.is_some_and(|p| (0..new_len).contains(&(p.old_pos - d)));
                let can_remove = remove_path.is_some_and(|p| p.old_pos + 1 < old_len);
                let mut base = match (add_path, remove_path) {
                    (Some(add), Some(remove))
                        if can_add && (!can_remove || remove.old_pos < add.old_pos) =>
                    {
                        self.add_to_path(add, true, false, 0)
                    }
                    (Some(add), None) if can_add => self.add_to_path(add, true, false, 0),
                    (_, Some(remove)) if can_remove => self.add_to_path(remove, false, true, 1),
                    _ => {
                        best[slot(d)] = None;
                        d += 2;
                        continue;
                    }
                };
                let new_pos = self.extract_common(&mut base, d);
                if base.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
                    return base.last;
                }
                best[slot(d)] = Some(base);
                if base.old_pos + 1 >= old_len {
                    max_diag = max_diag.min(d - 1);
                }
                if new_pos + 1 >= new_len {
                    min_diag = min_diag.max(d + 1);
                }
                d += 2;
            }
        }
        None
    }

    fn add_to_path(
        &mut self,
        path: PathState,
        added: bool,
        removed: bool,
        old_inc: isize,
    ) -> PathState {
        let component = match path.last.map(|i| self.arena[i]) {
            Some(last) if last.added == added && last.removed == removed => Component {
                count: last.count + 1,
                added,
                removed,
                prev: last.prev,
            },
            _ => Component {
                count: 1,
                added,
                removed,
                prev: path.last,
            },
        };
        self.arena.push(component);
        PathState {
            old_pos: path.old_pos + old_inc,
            last: Some(self.arena.len() - 1),
        }
    }

    /// Follows the diagonal while lines are equal; returns the new-text position.
    fn extract_common(&mut self, path: &mut PathState, diagonal: isize) -> isize {
        let (old_len, new_len) = (self.old.len() as isize, self.new.len() as isize);
        let mut old_pos = path.old_pos;
        let mut new_pos = old_pos - diagonal;
        let mut common = 0;
        while new_pos + 1 < new_len
            && old_pos + 1 < old_len
            && self.old[(old_pos + 1) as usize] == self.new[(new_pos + 1) as usize]
        {
            old_pos += 1;
            new_pos += 1;
            common += 1;
        }
        if common > 0 {
            self.arena.push(Component {
                count: common,
                added: false,
                removed: false,
                prev: path.last,
            });
            path.last = Some(self.arena.len() - 1);
        }
        path.old_pos = old_pos;
        new_pos
    }

    fn build(&self, mut last: Option<usize>) -> Vec<Part<'a>> {
        let mut components = Vec::new();
        while let Some(i) = last {
            components.push(self.arena[i]);
            last = self.arena[i].prev;
        }
        components.reverse();
        let (mut old_pos, mut new_pos) = (0usize, 0usize);
        components
            .into_iter()
            .map(|c| {
                if c.removed {
                    let lines = self.old[old_pos..old_pos + c.count].to_vec();
                    old_pos += c.count;
                    Part {
                        kind: Kind::Removed,
                        lines,
                    }
                } else {
                    let lines = self.new[new_pos..new_pos + c.count].to_vec();
                    new_pos += c.count;
                    if !c.added {
                        old_pos += c.count;
                    }
                    Part {
                        kind: if c.added { Kind::Added } else { Kind::Equal },
                        lines,
                    }
                }
            })
            .collect()
    }
}
