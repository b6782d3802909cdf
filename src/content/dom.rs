//! A compact document tree for the HTML reader ([`super::html`]): html5ever's tree builder (the
//! algorithm browsers use, broken markup and all) builds it through [`TreeSink`], and the reader
//! walks it ([`Dom::edges`]). Pure: no I/O.
//!
//! A general DOM (scraper's took about 170 bytes a node, every attribute kept) made a 4 MiB
//! page of small elements a tree of 65-75 MB. Here nodes live in one vector, linked by 32-bit
//! indices, and an element keeps only the attributes the reader asks for ([`KEPT`]): about 64
//! bytes a node. Text is kept as html5ever gives it (a text tendril shares the page's buffer
//! until text is appended to it).
//!
//! The tree is the one html5ever's own tree sinks build: adjacent text is merged as it is
//! appended, not when children are moved; a template's contents are a fragment, its element's
//! child; comments, doctypes and processing instructions are nodes without content.

use std::borrow::Cow;
use std::cell::RefCell;

use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElemName, ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{ns, Attribute, LocalName, Namespace, QualName};

/// No node.
const NONE: u32 = u32::MAX;

/// The attributes (in no namespace) an element keeps: those the reader looks at.
pub(super) const KEPT: &[&str] = &[
    "alt",
    "aria-hidden",
    "aria-label",
    "hidden",
    "href",
    "lang",
    "role",
    "title",
];

/// A parsed document.
pub(super) struct Dom {
    nodes: Vec<Node>,
}

struct Node {
    parent: u32,
    prev: u32,
    next: u32,
    first: u32,
    last: u32,
    data: Data,
}

/// What a node is.
pub(super) enum Data {
    Document,
    /// The contents of a `template`: the template element's child.
    Fragment,
    Element(Element),
    Text(StrTendril),
    /// A comment, a doctype or a processing instruction: nothing of the page's text.
    Other,
}

/// An element: its name and the attributes of [`KEPT`] it has.
pub(super) struct Element {
    ns: Namespace,
    name: LocalName,
    attrs: Box<[(LocalName, StrTendril)]>,
}

impl Element {
    /// The local name (`a`, `div`, `svg`), whatever the namespace.
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// The value of attribute `name` (one of [`KEPT`]), if the element has it.
    pub(super) fn attr(&self, name: &str) -> Option<&str> {
        debug_assert!(KEPT.contains(&name), "{name} is not kept");
        self.attrs
            .iter()
            .find(|(n, _)| &**n == name)
            .map(|(_, v)| &**v)
    }
}

/// One step of a walk over the tree: entering a node, or leaving it after its children.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Edge {
    Open(u32),
    Close(u32),
}

impl Dom {
    /// Parses `text` as an HTML document.
    pub(super) fn parse(text: &str) -> Dom {
        html5ever::parse_document(Sink::default(), Default::default()).one(text)
    }

    /// What node `id` is.
    pub(super) fn data(&self, id: u32) -> &Data {
        &self.nodes[id as usize].data
    }

    /// The first element child of the document: `<html>`.
    pub(super) fn root_element(&self) -> Option<&Element> {
        self.children(0).find_map(|id| match self.data(id) {
            Data::Element(e) => Some(e),
            _ => None,
        })
    }

    fn children(&self, id: u32) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(Some(self.nodes[id as usize].first), |&c| {
            Some(self.nodes[c as usize].next)
        })
        .take_while(|&c| c != NONE)
    }

    /// Every node in document order, from the document itself down: each one opened, then its
    /// children, then closed.
    pub(super) fn edges(&self) -> Edges<'_> {
        Edges {
            dom: self,
            next: Some(Edge::Open(0)),
        }
    }
}

/// The walk of [`Dom::edges`], without recursion.
pub(super) struct Edges<'a> {
    dom: &'a Dom,
    next: Option<Edge>,
}

impl Iterator for Edges<'_> {
    type Item = Edge;

    fn next(&mut self) -> Option<Edge> {
        let edge = self.next?;
        let nodes = &self.dom.nodes;
        self.next = match edge {
            Edge::Open(id) => match nodes[id as usize].first {
                NONE => Some(Edge::Close(id)),
                first => Some(Edge::Open(first)),
            },
            Edge::Close(0) => None,
            Edge::Close(id) => {
                let node = &nodes[id as usize];
                match (node.next, node.parent) {
                    (NONE, NONE) => None,
                    (NONE, parent) => Some(Edge::Close(parent)),
                    (next, _) => Some(Edge::Open(next)),
                }
            }
        };
        Some(edge)
    }
}

/// Builds a [`Dom`] for html5ever.
struct Sink {
    dom: RefCell<Dom>,
}

impl Default for Sink {
    fn default() -> Sink {
        let mut sink = Sink {
            dom: RefCell::new(Dom { nodes: Vec::new() }),
        };
        sink.dom.get_mut().add(Data::Document);
        sink
    }
}

impl Dom {
    fn add(&mut self, data: Data) -> u32 {
        // A document of four billion nodes would need far more than the largest body read.
        let id = u32::try_from(self.nodes.len()).expect("fewer than 2^32 nodes");
        self.nodes.push(Node {
            parent: NONE,
            prev: NONE,
            next: NONE,
            first: NONE,
            last: NONE,
            data,
        });
        id
    }

    fn detach(&mut self, id: u32) {
        let (parent, prev, next) = {
            let node = &self.nodes[id as usize];
            (node.parent, node.prev, node.next)
        };
        if parent == NONE {
            return;
        }
        match prev {
            NONE => self.nodes[parent as usize].first = next,
            prev => self.nodes[prev as usize].next = next,
        }
        match next {
            NONE => self.nodes[parent as usize].last = prev,
            next => self.nodes[next as usize].prev = prev,
        }
        let node = &mut self.nodes[id as usize];
        (node.parent, node.prev, node.next) = (NONE, NONE, NONE);
    }

    /// Makes `id` (detached first) the last child of `parent`.
    fn append_child(&mut self, parent: u32, id: u32) {
        self.detach(id);
        let last = self.nodes[parent as usize].last;
        {
            let node = &mut self.nodes[id as usize];
            node.parent = parent;
            node.prev = last;
        }
        match last {
            NONE => self.nodes[parent as usize].first = id,
            last => self.nodes[last as usize].next = id,
        }
        self.nodes[parent as usize].last = id;
    }

    /// Puts `id` (detached first) just before `sibling`, which has a parent.
    fn insert_before(&mut self, sibling: u32, id: u32) {
        self.detach(id);
        let (parent, prev) = {
            let s = &self.nodes[sibling as usize];
            (s.parent, s.prev)
        };
        {
            let node = &mut self.nodes[id as usize];
            node.parent = parent;
            node.prev = prev;
            node.next = sibling;
        }
        self.nodes[sibling as usize].prev = id;
        match prev {
            NONE => self.nodes[parent as usize].first = id,
            prev => self.nodes[prev as usize].next = id,
        }
    }

    /// Appends `text` to node `id` if it is text: adjacent text is one node.
    fn extend_text(&mut self, id: u32, text: &StrTendril) -> bool {
        if id == NONE {
            return false;
        }
        match &mut self.nodes[id as usize].data {
            Data::Text(t) => {
                t.push_tendril(text);
                true
            }
            _ => false,
        }
    }
}

/// The name html5ever asks an element for.
#[derive(Debug)]
struct Name {
    ns: Namespace,
    local: LocalName,
}

impl ElemName for Name {
    fn ns(&self) -> &Namespace {
        &self.ns
    }

    fn local_name(&self) -> &LocalName {
        &self.local
    }
}

fn kept(attrs: Vec<Attribute>) -> impl Iterator<Item = (LocalName, StrTendril)> {
    attrs
        .into_iter()
        .filter(|a| a.name.ns == ns!() && KEPT.contains(&&*a.name.local))
        .map(|a| (a.name.local, a.value))
}

impl TreeSink for Sink {
    type Handle = u32;
    type Output = Dom;
    type ElemName<'a> = Name;

    fn finish(self) -> Dom {
        self.dom.into_inner()
    }

    fn parse_error(&self, _msg: Cow<'static, str>) {}

    fn get_document(&self) -> u32 {
        0
    }

    fn elem_name<'a>(&'a self, target: &'a u32) -> Name {
        match &self.dom.borrow().nodes[*target as usize].data {
            Data::Element(e) => Name {
                ns: e.ns.clone(),
                local: e.name.clone(),
            },
            // The tree builder asks only about elements.
            _ => Name {
                ns: ns!(),
                local: LocalName::from(""),
            },
        }
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> u32 {
        let mut dom = self.dom.borrow_mut();
        let id = dom.add(Data::Element(Element {
            ns: name.ns,
            name: name.local,
            attrs: kept(attrs).collect(),
        }));
        if flags.template {
            let contents = dom.add(Data::Fragment);
            dom.append_child(id, contents);
        }
        id
    }

    fn create_comment(&self, _text: StrTendril) -> u32 {
        self.dom.borrow_mut().add(Data::Other)
    }

    fn create_pi(&self, _target: StrTendril, _data: StrTendril) -> u32 {
        self.dom.borrow_mut().add(Data::Other)
    }

    fn append(&self, parent: &u32, child: NodeOrText<u32>) {
        let mut dom = self.dom.borrow_mut();
        match child {
            NodeOrText::AppendNode(id) => dom.append_child(*parent, id),
            NodeOrText::AppendText(text) => {
                let last = dom.nodes[*parent as usize].last;
                if !dom.extend_text(last, &text) {
                    let id = dom.add(Data::Text(text));
                    dom.append_child(*parent, id);
                }
            }
        }
    }

    fn append_based_on_parent_node(&self, element: &u32, prev: &u32, child: NodeOrText<u32>) {
        let has_parent = self.dom.borrow().nodes[*element as usize].parent != NONE;
        if has_parent {
            self.append_before_sibling(element, child);
        } else {
            self.append(prev, child);
        }
    }

    fn append_doctype_to_document(&self, _: StrTendril, _: StrTendril, _: StrTendril) {
        let mut dom = self.dom.borrow_mut();
        let id = dom.add(Data::Other);
        dom.append_child(0, id);
    }

    fn get_template_contents(&self, target: &u32) -> u32 {
        self.dom.borrow().nodes[*target as usize].first
    }

    fn same_node(&self, x: &u32, y: &u32) -> bool {
        x == y
    }

    fn set_quirks_mode(&self, _mode: QuirksMode) {}

    fn append_before_sibling(&self, sibling: &u32, new_node: NodeOrText<u32>) {
        let mut dom = self.dom.borrow_mut();
        if let NodeOrText::AppendNode(id) = new_node {
            dom.detach(id);
        }
        if dom.nodes[*sibling as usize].parent == NONE {
            return;
        }
        match new_node {
            NodeOrText::AppendNode(id) => dom.insert_before(*sibling, id),
            NodeOrText::AppendText(text) => {
                let prev = dom.nodes[*sibling as usize].prev;
                if !dom.extend_text(prev, &text) {
                    let id = dom.add(Data::Text(text));
                    dom.insert_before(*sibling, id);
                }
            }
        }
    }

    fn add_attrs_if_missing(&self, target: &u32, attrs: Vec<Attribute>) {
        let mut dom = self.dom.borrow_mut();
        let Data::Element(element) = &mut dom.nodes[*target as usize].data else {
            return;
        };
        let mut all = std::mem::take(&mut element.attrs).into_vec();
        for (name, value) in kept(attrs) {
            if !all.iter().any(|(n, _)| *n == name) {
                all.push((name, value));
            }
        }
        element.attrs = all.into_boxed_slice();
    }

    fn remove_from_parent(&self, target: &u32) {
        self.dom.borrow_mut().detach(*target);
    }

    fn reparent_children(&self, node: &u32, new_parent: &u32) {
        let mut dom = self.dom.borrow_mut();
        while let Some(child) = Some(dom.nodes[*node as usize].first).filter(|&c| c != NONE) {
            dom.append_child(*new_parent, child);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree as text: elements by name with their children in brackets, text quoted.
    fn shape(dom: &Dom) -> String {
        let mut out = String::new();
        for edge in dom.edges() {
            match edge {
                Edge::Open(id) => match dom.data(id) {
                    Data::Element(e) => out.push_str(&format!("{}[", e.name())),
                    Data::Text(t) => out.push_str(&format!("{:?}", &**t)),
                    Data::Fragment => out.push_str("#fragment["),
                    Data::Document | Data::Other => {}
                },
                Edge::Close(id) => {
                    if matches!(dom.data(id), Data::Element(_) | Data::Fragment) {
                        out.push(']');
                    }
                }
            }
        }
        out
    }

    #[test]
    fn documents_parse_as_browsers_build_them() {
        let cases = [
            ("<p>a<b>b</p>c", r#"html[head[]body[p["a"b["b"]]b["c"]]]"#),
            // Misnested formatting: the adoption agency moves nodes around.
            (
                "<b>1<p>2</b>3</p>",
                r#"html[head[]body[b["1"]p[b["2"]"3"]]]"#,
            ),
            // Text inside a table is moved before it (foster parenting).
            (
                "<table><tr><td>x</td></tr>y</table>",
                r#"html[head[]body["y"table[tbody[tr[td["x"]]]]]]"#,
            ),
            (
                "<template><i>t</i></template><!-- c -->z",
                r#"html[head[template[#fragment[i["t"]]]]body["z"]]"#,
            ),
            ("", "html[head[]body[]]"),
        ];
        for (html, want) in cases {
            assert_eq!(shape(&Dom::parse(html)), want, "{html}");
        }
    }

    #[test]
    fn elements_keep_the_attributes_the_reader_asks_for() {
        let dom = Dom::parse(
            "<html lang=fr><a href='/x' class=c title=T data-x=1 href=/dup>l</a>\
             <svg><a xlink:href='/s'>s</a></svg>",
        );
        assert_eq!(dom.root_element().and_then(|e| e.attr("lang")), Some("fr"));
        let links: Vec<(Option<&str>, Option<&str>, usize)> = dom
            .edges()
            .filter_map(|edge| match edge {
                Edge::Open(id) => match dom.data(id) {
                    Data::Element(e) if e.name() == "a" => {
                        Some((e.attr("href"), e.attr("title"), e.attrs.len()))
                    }
                    _ => None,
                },
                Edge::Close(_) => None,
            })
            .collect();
        assert_eq!(links, [(Some("/x"), Some("T"), 2), (None, None, 0)]);
    }
}
