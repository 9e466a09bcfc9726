//! `get_neighbors`: the concepts a concept links to and the concepts that link to it.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Value, json};

use super::lookup::{find, id_schema, problems_note, read_only};
use super::{Attached, Link, OkfBundle};
use harnessx_core::output::{ToolError, ToolOutput};
use harnessx_core::tool::{ToolDefinition, sync_handler_fn};

/// The tool's name.
pub const GET_NEIGHBORS: &str = "get_neighbors";

pub(super) fn definition(attached: Arc<Attached>) -> ToolDefinition {
    read_only(
        ToolDefinition::new(
            GET_NEIGHBORS,
            "List the concepts linked from a concept and the concepts that link to it, each with \
             the link's text and kind (`link`, or `citation` for links under a Citations \
             heading). Use it to follow the knowledge graph from a concept you have read.",
            id_schema(),
            sync_handler_fn(move |args, _ctx| neighbors(&args, &attached)),
        ),
        "Get neighbors",
    )
}

fn neighbors(args: &Value, attached: &Attached) -> Result<ToolOutput, ToolError> {
    let (bundle, id) = find(attached, args, GET_NEIGHBORS)?;
    let Some(concept) = bundle.concept(&id) else {
        return Err(ToolError::failed(format!(
            "Concept `{id}` is no longer in bundle `{}`. Call search_concepts again.",
            bundle.name()
        )));
    };
    let outgoing = once_each(&concept.links, |l| &l.to);
    let incoming = once_each(bundle.incoming(&id), |l| &l.from);
    let mut text = format!("Neighbors of `{id}` (bundle `{}`)", bundle.name());
    section(&mut text, "Links from it", &outgoing, |l| &l.to, &bundle);
    section(&mut text, "Links to it", &incoming, |l| &l.from, &bundle);
    text.push_str(&problems_note(&bundle, &id));
    let entry = |l: &Link, other: &str| {
        json!({
            "id": other,
            "title": bundle.concept(other).and_then(|c| c.title()),
            "text": l.text,
            "kind": l.kind,
        })
    };
    Ok(ToolOutput::text(text).with_structured(json!({
        "bundle": bundle.name(),
        "id": id,
        "outgoing": outgoing.iter().map(|l| entry(l, &l.to)).collect::<Vec<_>>(),
        "incoming": incoming.iter().map(|l| entry(l, &l.from)).collect::<Vec<_>>(),
    })))
}

/// The first link to (or from) each neighbor, in order: a concept that links to another several
/// times, with other texts or as a citation too, makes one neighbor, not several.
fn once_each(links: &[Link], other: impl Fn(&Link) -> &String) -> Vec<&Link> {
    let mut seen = std::collections::HashSet::new();
    links
        .iter()
        .filter(|l| seen.insert(other(l).clone()))
        .collect()
}

fn section(
    text: &mut String,
    heading: &str,
    links: &[&Link],
    other: impl Fn(&Link) -> &String,
    bundle: &OkfBundle,
) {
    let _ = write!(text, "\n\n{heading} ({}):", links.len());
    if links.is_empty() {
        text.push_str("\n(none)");
    }
    for link in links {
        let id = other(link);
        let _ = write!(text, "\n- [{}] {id}", link.kind.as_str());
        if let Some(title) = bundle.concept(id).and_then(|c| c.title()) {
            let _ = write!(text, " — {title}");
        }
        let _ = write!(text, " (link text: \"{}\")", link.text);
    }
}
