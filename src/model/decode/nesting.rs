//! How deep a YAML document nests, estimated before it is parsed.
//!
//! libyaml's scanner does work per token in proportion to the collections open around
//! it, and serde_yaml_ng reads a whole document into events before its own recursion
//! limit looks at them: a few tens of KiB nested thousands deep cost seconds. This one
//! linear pass follows the document's structure closely enough to bound its depth —
//! block collections by the columns of their entries and keys, flow collections by
//! their brackets — skipping comments, quoted scalars and block scalars, and stops as
//! soon as the bound is passed, so it costs at most one read of the text.
//!
//! The estimate never falls below the true depth by more than half: a column holds at
//! most a mapping and a sequence written at the mapping's indentation
//! (`key:\n- item`). A quote opens a quoted scalar only where YAML starts a node, as
//! libyaml reads it, so brackets cannot hide behind a quote libyaml does not see.

/// Whether `text` nests deeper than `limit` collections (as this module estimates).
pub(super) fn nests_deeper_than(text: &str, limit: usize) -> bool {
    let mut scan = Scan {
        limit,
        block: Vec::new(),
        flow: 0,
        quote: None,
        block_scalar: None,
        flow_at_node: false,
        after_json_like: false,
    };
    text.split('\n').any(|line| {
        scan.line(line.strip_suffix('\r').unwrap_or(line).as_bytes())
            .is_err()
    })
}

/// The bound was passed.
struct TooDeep;

struct BlockScalar {
    /// The column of the block collection that holds it (-1 at the top level).
    parent: isize,
    /// Its content's indentation, once its first non-blank line has set it.
    indent: Option<usize>,
}

struct Scan {
    limit: usize,
    /// The columns of the open block collections, innermost last.
    block: Vec<usize>,
    /// Open flow collections.
    flow: usize,
    /// The quote character of a quoted scalar that goes on to the next line.
    quote: Option<u8>,
    block_scalar: Option<BlockScalar>,
    /// Inside a flow collection, whether the next character may start a node (where a
    /// quote opens a quoted scalar).
    flow_at_node: bool,
    /// Inside a flow collection, whether the last character read closed a quoted scalar
    /// or a collection.
    after_json_like: bool,
}

fn is_blank(byte: Option<&u8>) -> bool {
    matches!(byte, None | Some(b' ' | b'\t'))
}

impl Scan {
    fn depth(&self) -> usize {
        self.block.len() + self.flow
    }

    fn check(&self) -> Result<(), TooDeep> {
        if self.depth() > self.limit {
            Err(TooDeep)
        } else {
            Ok(())
        }
    }

    fn push_block(&mut self, column: usize) -> Result<(), TooDeep> {
        while self.block.last().is_some_and(|&top| top >= column) {
            self.block.pop();
        }
        self.block.push(column);
        self.check()
    }

    fn line(&mut self, line: &[u8]) -> Result<(), TooDeep> {
        let indent = line.iter().take_while(|&&b| b == b' ').count();
        let blank = line[indent..].iter().all(|&b| b == b' ' || b == b'\t');
        if let Some(scalar) = &mut self.block_scalar {
            if blank {
                return Ok(());
            }
            match scalar.indent {
                Some(content) if indent >= content => return Ok(()),
                None if indent as isize > scalar.parent => {
                    scalar.indent = Some(indent);
                    return Ok(());
                }
                _ => self.block_scalar = None,
            }
        }
        let mut at = 0;
        if let Some(quote) = self.quote {
            match skip_quoted(line, 0, quote) {
                Some(end) => {
                    self.quote = None;
                    at = end;
                }
                None => return Ok(()),
            }
            if self.flow == 0 {
                return self.after_node(line, at, None);
            }
            self.flow_at_node = false;
            self.after_json_like = true;
        }
        if self.flow > 0 {
            return match self.flow_scan(line, at)? {
                Some(end) => self.after_node(line, end, None),
                None => Ok(()),
            };
        }
        if blank {
            return Ok(());
        }
        if at == 0 {
            if line.starts_with(b"%") {
                return Ok(());
            }
            if (line.starts_with(b"---") || line.starts_with(b"...")) && is_blank(line.get(3)) {
                self.block.clear();
                at = 3;
            } else {
                // A new line at this indentation closes the collections at or right of it.
                while self.block.last().is_some_and(|&top| top >= indent) {
                    self.block.pop();
                }
                at = indent;
            }
        }
        self.block_node(line, at)
    }

    /// A block node (and what follows it on the line) starting at or after `at`.
    fn block_node(&mut self, line: &[u8], mut at: usize) -> Result<(), TooDeep> {
        loop {
            while line.get(at).is_some_and(|&b| b == b' ' || b == b'\t') {
                at += 1;
            }
            let Some(&byte) = line.get(at) else {
                return Ok(());
            };
            match byte {
                b'#' => return Ok(()),
                b'-' | b'?' if is_blank(line.get(at + 1)) => {
                    self.push_block(at)?;
                    at += 1;
                }
                b':' if is_blank(line.get(at + 1)) => at += 1,
                b'&' | b'!' => {
                    while line.get(at).is_some_and(|&b| b != b' ' && b != b'\t') {
                        at += 1;
                    }
                }
                b'|' | b'>' => {
                    self.block_scalar = Some(BlockScalar {
                        parent: self.block.last().map_or(-1, |&c| c as isize),
                        indent: None,
                    });
                    return Ok(());
                }
                b'[' | b'{' => {
                    self.flow = 1;
                    self.flow_at_node = true;
                    self.check()?;
                    return match self.flow_scan(line, at + 1)? {
                        Some(end) => self.after_node(line, end, Some(at)),
                        None => Ok(()),
                    };
                }
                b'"' | b'\'' => {
                    return match skip_quoted(line, at + 1, byte) {
                        Some(end) => self.after_node(line, end, Some(at)),
                        None => {
                            self.quote = Some(byte);
                            Ok(())
                        }
                    };
                }
                _ => {
                    // A plain scalar: a key when `: ` follows, else it ends the line.
                    let start = at;
                    while let Some(&b) = line.get(at) {
                        if b == b':' && is_blank(line.get(at + 1)) {
                            self.push_block(start)?;
                            break;
                        }
                        if b == b'#' && at > start && matches!(line[at - 1], b' ' | b'\t') {
                            return Ok(());
                        }
                        at += 1;
                    }
                    if at >= line.len() {
                        return Ok(());
                    }
                    at += 1;
                }
            }
        }
    }

    /// After a quoted scalar or a flow collection in block context: `: ` makes it a key
    /// of a mapping at `start` and a value follows; anything else ends the line.
    fn after_node(
        &mut self,
        line: &[u8],
        mut at: usize,
        start: Option<usize>,
    ) -> Result<(), TooDeep> {
        while line.get(at).is_some_and(|&b| b == b' ' || b == b'\t') {
            at += 1;
        }
        if line.get(at) == Some(&b':') && is_blank(line.get(at + 1)) {
            if let Some(start) = start {
                self.push_block(start)?;
            }
            return self.block_node(line, at + 1);
        }
        Ok(())
    }

    /// Inside flow collections from `at`: the position after the one that closes the
    /// outermost, or `None` when the line ends first (or a quoted scalar goes on).
    fn flow_scan(&mut self, line: &[u8], mut at: usize) -> Result<Option<usize>, TooDeep> {
        while let Some(&byte) = line.get(at) {
            at += 1;
            match byte {
                b'[' | b'{' => {
                    self.flow += 1;
                    self.flow_at_node = true;
                    self.check()?;
                }
                b']' | b'}' => {
                    self.flow = self.flow.saturating_sub(1);
                    self.flow_at_node = false;
                    if self.flow == 0 {
                        return Ok(Some(at));
                    }
                }
                b',' | b'?' => self.flow_at_node = true,
                // A value follows `: `, or `:` right after a quoted key or a collection
                // (`{"a":"b"}`); elsewhere `:` is part of a plain scalar (`a:b`).
                b':' => self.flow_at_node = is_blank(line.get(at)) || self.after_json_like,
                b' ' | b'\t' => continue,
                b'#' if at == 1 || matches!(line[at - 2], b' ' | b'\t') => return Ok(None),
                b'"' | b'\'' if self.flow_at_node => match skip_quoted(line, at, byte) {
                    Some(end) => {
                        at = end;
                        self.flow_at_node = false;
                        self.after_json_like = true;
                        continue;
                    }
                    None => {
                        self.quote = Some(byte);
                        return Ok(None);
                    }
                },
                _ => self.flow_at_node = false,
            }
            self.after_json_like = matches!(byte, b']' | b'}');
        }
        Ok(None)
    }
}

/// The position after the quote that closes a scalar quoted with `quote` whose text
/// starts at `at`, or `None` when the line ends first.
fn skip_quoted(line: &[u8], mut at: usize, quote: u8) -> Option<usize> {
    while let Some(&byte) = line.get(at) {
        at += 1;
        if quote == b'"' && byte == b'\\' {
            at += 1;
        } else if byte == quote {
            if quote == b'\'' && line.get(at) == Some(&b'\'') {
                at += 1;
            } else {
                return Some(at);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::nests_deeper_than;

    fn depth(text: &str) -> usize {
        (0..200)
            .find(|&limit| !nests_deeper_than(text, limit))
            .expect("under 200")
    }

    #[test]
    fn block_collections_count_by_their_columns() {
        assert_eq!(depth("kind: Pod\n"), 1);
        assert_eq!(depth("a:\n  b:\n    c: 1\n  d: 2\ne: 3\n"), 3);
        assert_eq!(depth("- - - x\n"), 3);
        // Four deep: a sequence at its key's column shares the column.
        assert_eq!(depth("items:\n- a: 1\n  b:\n  - c\n"), 2);
        assert_eq!(depth("# only a comment\n\n"), 0);
    }

    #[test]
    fn flow_collections_count_by_their_brackets() {
        assert_eq!(depth("a: [1, [2, {b: c}]]\n"), 4);
        assert_eq!(depth("a: [1,\n  [2,\n   [3]]]\nb: 1\n"), 4);
        // Brackets in plain block scalars and closed quotes open nothing.
        assert_eq!(depth("a: x[0] and {y}\nb: \"[[[\"\nc: '{{'\n"), 1);
        // A close inside a quoted scalar closes nothing; a quote inside a plain scalar
        // opens no quoted scalar.
        assert_eq!(depth("a: [\"]\", [\"]\", [\"]\"]]]\n"), 4);
        assert_eq!(depth("a: {\"k\":\"v]\", b: [don't, [x'y]]}\n"), 4);
        assert_eq!(depth("a: [x 'y\n  [\n  [\n  ]]]\n"), 4);
    }

    #[test]
    fn block_and_quoted_scalars_are_skipped() {
        let script =
            "command:\n- sh\n- -c\n- |\n  if [[ -f x ]]; then\n    - - - - - - - - -\n  fi\nb: 1\n";
        assert_eq!(depth(script), 1);
        assert_eq!(depth("a: \"multi\n  - - - - - [[[[\n  line\"\n"), 1);
        assert_eq!(depth("--- |\n  [[[[[[\n"), 0);
    }

    #[test]
    fn deep_documents_are_caught_early() {
        let flow = "[".repeat(100_000);
        assert!(nests_deeper_than(&flow, 64));
        let dashes = "- ".repeat(100_000);
        assert!(nests_deeper_than(&dashes, 64));
        let mut block = String::new();
        for i in 0..100 {
            block.push_str(&" ".repeat(i));
            block.push_str("a:\n");
        }
        assert!(nests_deeper_than(&block, 64));
        assert!(!nests_deeper_than(&block, 100));
    }
}
