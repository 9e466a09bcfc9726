//! Parsing HTML into a tree with bounded work.
//!
//! The tree is built by html5ever, the parser htmd itself uses, so the depth and size measured
//! here are those of the tree htmd walks, not an estimate: a `<div/>` nests like `<div>`, end
//! tags the parser ignores close nothing, and elements the parser re-creates (formatting elements
//! reopened after a misnested end tag) count too. The parser's own work per token grows with the
//! depth of its stack of open elements, and htmd recurses once per level, so the input is fed in
//! small chunks and parsing stops after the first chunk that builds a tree deeper than
//! [`MAX_DEPTH`] or larger than [`MAX_ELEMENTS`]: the work done is bounded by those limits and the
//! size of one chunk, whatever the page.

use std::borrow::Cow;
use std::cell::Cell;
use std::rc::Rc;

use html5ever::interface::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::TreeBuilderOpts;
use html5ever::{Attribute, ExpandedName, ParseOpts, QualName, parse_document};
use markup5ever_rcdom::{Handle, Node, NodeData, RcDom};

/// The deepest tree converted to Markdown. htmd recurses once per level (a few kilobytes of
/// stack each in debug builds) and html5ever searches its stack of open elements for most tags;
/// real pages nest a few dozen levels.
pub(crate) const MAX_DEPTH: usize = 512;

/// The most nodes (elements, text and comments) a converted tree may have. htmd merges adjacent
/// inline siblings by removing them from a vector one at a time, which is quadratic in the number
/// of siblings; this bound keeps that, and every other per-node cost, small. A long article has a
/// few tens of thousands.
pub(crate) const MAX_NODES: usize = 100_000;

/// The most work, in rough units, spent on one page. Each unit is about one step of html5ever or
/// htmd: a tag costs the depth of the tree so far (html5ever searches its stack of open elements
/// for most tags), a node placed costs two per level of its depth and text a further one per 32
/// bytes per level (htmd copies every element's Markdown into its parent's, and prefixes quoted
/// and listed lines once per level), and a node placed among many siblings one per 64 of them
/// (htmd merges adjacent inline siblings by removing them from a vector one at a time). Long
/// ordinary pages stay well below this; a page nesting hundreds of levels around much text or
/// many lines, or with tens of thousands of siblings, does not.
pub(crate) const MAX_WORK: u64 = 20_000_000;

/// Bytes fed to the parser between two checks of the limits. Within one chunk the parser can do
/// at most one chunk's worth of tokens past a limit.
const CHUNK_BYTES: usize = 1024;

/// Why a page was not parsed into a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TooLarge {
    /// The tree nests deeper than [`MAX_DEPTH`].
    Depth,
    /// The tree has more than [`MAX_NODES`] nodes.
    Nodes,
    /// Parsing and converting it would take more than [`MAX_WORK`].
    Work,
}

/// Parses `html` as htmd would (scripting off), unless its tree would be deeper than
/// [`MAX_DEPTH`] or larger than [`MAX_NODES`].
pub(crate) fn parse(html: &str) -> Result<Rc<Node>, TooLarge> {
    let limits = Rc::new(Counts::default());
    let sink = CountingSink {
        dom: RcDom::default(),
        counts: Rc::clone(&limits),
    };
    let opts = ParseOpts {
        tree_builder: TreeBuilderOpts {
            scripting_enabled: false,
            ..TreeBuilderOpts::default()
        },
        ..ParseOpts::default()
    };
    // Tendrils are at most 4 GiB; pages are far smaller (the download cap is 10 MB by default).
    let Ok(total) = u32::try_from(html.len()) else {
        return Err(TooLarge::Work);
    };
    // One buffer for the whole page, fed in slices of it: text that spans chunks then grows in
    // place (adjacent slices of one buffer join without copying), as when the page is fed whole.
    let whole = StrTendril::from_slice(html);
    let mut parser = parse_document(sink, opts);
    let mut at = 0;
    while at < html.len() {
        let mut end = (at + CHUNK_BYTES).min(total as usize);
        while !html.is_char_boundary(end) {
            end += 1;
        }
        let chunk = &html[at..end];
        // `at` and `end` are character boundaries within `total`.
        parser.process(whole.subtendril(at as u32, (end - at) as u32));
        let tags = chunk.bytes().filter(|b| *b == b'<').count() as u64;
        limits.add_work(tags * (limits.depth.get() as u64 + 1));
        limits.check()?;
        at = end;
    }
    let dom = parser.finish();
    // Adoption of misnested formatting elements moves subtrees under new parents, which can
    // deepen them without an append being seen: measure the finished tree.
    let (depth, nodes) = measure(&dom.document);
    if depth > MAX_DEPTH {
        return Err(TooLarge::Depth);
    }
    if nodes > MAX_NODES {
        return Err(TooLarge::Nodes);
    }
    limits.check()?;
    Ok(dom.document.clone())
}

/// The depth and node count of a tree, without recursion.
pub(crate) fn measure(root: &Handle) -> (usize, usize) {
    let mut stack = vec![(Rc::clone(root), 0usize)];
    let mut deepest = 0;
    let mut nodes = 0;
    while let Some((node, depth)) = stack.pop() {
        nodes += 1;
        deepest = deepest.max(depth);
        for child in node.children.borrow().iter() {
            stack.push((Rc::clone(child), depth + 1));
        }
    }
    (deepest, nodes)
}

/// What the sink has seen so far.
#[derive(Debug, Default)]
struct Counts {
    /// Nodes created.
    nodes: Cell<usize>,
    /// The deepest node appended, counted up to `MAX_DEPTH + 1`.
    depth: Cell<usize>,
    /// Work done and to do, in the units of [`MAX_WORK`].
    work: Cell<u64>,
}

impl Counts {
    fn check(&self) -> Result<(), TooLarge> {
        if self.depth.get() > MAX_DEPTH {
            Err(TooLarge::Depth)
        } else if self.nodes.get() > MAX_NODES {
            Err(TooLarge::Nodes)
        } else if self.work.get() > MAX_WORK {
            Err(TooLarge::Work)
        } else {
            Ok(())
        }
    }

    fn created(&self) {
        self.nodes.set(self.nodes.get() + 1);
    }

    fn add_work(&self, units: u64) {
        self.work.set(self.work.get().saturating_add(units));
    }

    /// Records a node just placed in the tree at `depth`, with `text` bytes of text, among
    /// `siblings` children of its parent.
    fn placed(&self, depth: usize, text: usize, siblings: usize) {
        if depth > self.depth.get() {
            self.depth.set(depth);
        }
        self.add_work(depth as u64 * (2 + text as u64 / 32) + siblings as u64 / 64);
    }
}

/// The depth of `node` in the tree: its ancestors, counted up to one past [`MAX_DEPTH`] (so the
/// walk costs at most that many steps).
fn depth_of(node: &Handle) -> usize {
    let mut depth = 0;
    let mut current = parent(node);
    while let Some(p) = current {
        depth += 1;
        if depth > MAX_DEPTH {
            break;
        }
        current = parent(&p);
    }
    depth
}

fn parent(node: &Handle) -> Option<Handle> {
    let weak = node.parent.take();
    let parent = weak.as_ref().and_then(std::rc::Weak::upgrade);
    node.parent.set(weak);
    parent
}

/// An [`RcDom`] that counts the nodes it creates and the depth at which it places them.
struct CountingSink {
    dom: RcDom,
    counts: Rc<Counts>,
}

impl CountingSink {
    /// Records what was just placed in the tree under `parent`: a node at its depth, or text one
    /// level below `parent` (counted as a node; `append` leaves out text merged into the text
    /// before it, and other placements over-count it, on the safe side).
    fn placed(&self, parent: &Handle, child: &Placed) {
        let siblings = parent.children.borrow().len();
        match child {
            Placed::Node(node) => self.counts.placed(depth_of(node), 0, siblings),
            Placed::Text(bytes) => {
                self.counts.created();
                self.counts.placed(depth_of(parent) + 1, *bytes, siblings);
            }
        }
    }
}

/// What an append placed, kept to measure it once placed.
enum Placed {
    Node(Handle),
    Text(usize),
}

impl Placed {
    fn of(child: &NodeOrText<Handle>) -> Self {
        match child {
            NodeOrText::AppendNode(node) => Self::Node(Rc::clone(node)),
            NodeOrText::AppendText(text) => Self::Text(text.len()),
        }
    }
}

impl TreeSink for CountingSink {
    type Handle = Handle;
    type Output = RcDom;
    type ElemName<'a>
        = ExpandedName<'a>
    where
        Self: 'a;

    fn finish(self) -> RcDom {
        self.dom
    }

    fn parse_error(&self, _msg: Cow<'static, str>) {
        // Not kept: a page of junk would otherwise collect one message per token.
    }

    fn get_document(&self) -> Handle {
        self.dom.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a Handle) -> ExpandedName<'a> {
        self.dom.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> Handle {
        self.counts.created();
        self.dom.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> Handle {
        self.counts.created();
        self.dom.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> Handle {
        self.counts.created();
        self.dom.create_pi(target, data)
    }

    fn append(&self, parent: &Handle, child: NodeOrText<Handle>) {
        // Text after text is merged into it (the tokenizer splits text at every character
        // reference and chunk boundary): more bytes, not another node.
        let merged = matches!(child, NodeOrText::AppendText(_))
            && parent
                .children
                .borrow()
                .last()
                .is_some_and(|last| matches!(last.data, NodeData::Text { .. }));
        let placed = Placed::of(&child);
        self.dom.append(parent, child);
        match placed {
            Placed::Text(bytes) if merged => {
                self.counts
                    .add_work((depth_of(parent) as u64 + 1) * (bytes as u64 / 32));
            }
            placed => self.placed(parent, &placed),
        }
    }

    fn append_based_on_parent_node(
        &self,
        element: &Handle,
        prev_element: &Handle,
        child: NodeOrText<Handle>,
    ) {
        let placed = Placed::of(&child);
        self.dom
            .append_based_on_parent_node(element, prev_element, child);
        // Text goes next to `element` or into `prev_element`: measure from the deeper one.
        self.placed(prev_element, &placed);
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.counts.created();
        self.dom
            .append_doctype_to_document(name, public_id, system_id);
    }

    fn get_template_contents(&self, target: &Handle) -> Handle {
        self.dom.get_template_contents(target)
    }

    fn same_node(&self, x: &Handle, y: &Handle) -> bool {
        self.dom.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.dom.set_quirks_mode(mode);
    }

    fn append_before_sibling(&self, sibling: &Handle, new_node: NodeOrText<Handle>) {
        let placed = Placed::of(&new_node);
        self.dom.append_before_sibling(sibling, new_node);
        // Text placed before `sibling` sits at its depth, one below its parent.
        let parent = parent(sibling).unwrap_or_else(|| Rc::clone(sibling));
        self.placed(&parent, &placed);
    }

    fn add_attrs_if_missing(&self, target: &Handle, attrs: Vec<Attribute>) {
        self.dom.add_attrs_if_missing(target, attrs);
    }

    fn remove_from_parent(&self, target: &Handle) {
        self.dom.remove_from_parent(target);
    }

    fn reparent_children(&self, node: &Handle, new_parent: &Handle) {
        self.dom.reparent_children(node, new_parent);
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &Handle) -> bool {
        self.dom.is_mathml_annotation_xml_integration_point(handle)
    }

    fn maybe_clone_an_option_into_selectedcontent(&self, option: &Handle) {
        self.dom.maybe_clone_an_option_into_selectedcontent(option);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_element(node: &Handle, name: &str) -> bool {
        matches!(&node.data, NodeData::Element { name: n, .. } if &*n.local == name)
    }

    #[test]
    fn ordinary_pages_parse_into_the_tree_htmd_walks() {
        let dom = parse("<p>a<div/>b</div><br/>").expect("small page");
        let (depth, nodes) = measure(&dom);
        // document > html > body > div > text
        assert_eq!(depth, 4);
        // document, html, head, body, p, a, div, b, br
        assert_eq!(nodes, 9);
        let html = dom.children.borrow()[0].clone();
        assert!(is_element(&html, "html"));
    }

    #[test]
    fn slashes_on_ordinary_elements_nest_and_are_stopped_at_the_depth_limit() {
        for tag in ["<div/>", "<marquee/>", "<span/>x", "<rt/>"] {
            for n in [20_000, 100_000] {
                assert_eq!(
                    parse(&tag.repeat(n)).err(),
                    Some(TooLarge::Depth),
                    "{tag} x {n}"
                );
            }
        }
        // Just within the limit it parses (html, body and the document take three levels).
        assert!(parse(&"<div/>".repeat(MAX_DEPTH - 3)).is_ok());
    }

    #[test]
    fn reopened_formatting_elements_count_as_the_parser_builds_them() {
        // Each `</p>` closes the `<b>` inside it, and the next start tag reopens every `<b>`
        // still listed as active: no tag nests, yet the tree does.
        // Each reopening re-creates the whole chain, so the work limit may come first.
        let page: String = (0..2000).map(|i| format!("<p><b id={i}></p>")).collect();
        let refused = parse(&page).err();
        assert!(
            matches!(refused, Some(TooLarge::Depth | TooLarge::Work)),
            "{refused:?}"
        );
        // 100 of them nest 100 deep, within every limit.
        let page: String = (0..100).map(|i| format!("<p><b id={i}></p>")).collect();
        let (depth, _) = measure(&parse(&format!("{page}x")).expect("within the limits"));
        assert!(depth > 100, "{depth}");
    }

    #[test]
    fn pages_with_too_many_nodes_are_refused() {
        // 21 nodes per div, few siblings anywhere.
        let block = format!("<div>{}</div>", "<i>x</i>".repeat(10));
        assert_eq!(parse(&block.repeat(5000)).err(), Some(TooLarge::Nodes));
        let (_, nodes) = measure(&parse(&block.repeat(4000)).expect("84 000 nodes"));
        assert_eq!(nodes, 4000 * 21 + 4);
    }

    #[test]
    fn text_split_by_entities_is_one_node() {
        // The tokenizer emits text in pieces at every `&amp;` and chunk boundary.
        let page = format!("<pre>{}</pre>", "a &amp;&amp; b; ".repeat(200_000));
        let (_, nodes) = measure(&parse(&page).expect("one long text"));
        // document, html, head, body, pre, text
        assert_eq!(nodes, 6);
    }

    #[test]
    fn tens_of_thousands_of_siblings_count_as_work() {
        // htmd would merge these one removal at a time: quadratic in their number.
        assert_eq!(
            parse(&"<i>x</i>".repeat(60_000)).err(),
            Some(TooLarge::Work)
        );
        assert!(parse(&"<i>x</i>".repeat(10_000)).is_ok());
    }
}
