//! `/v2/knowledge`: the stored knowledge bases ([`crate::knowledge`]) — created, listed with
//! their document counts, read with their documents, deleted when no agent has them attached —
//! and their documents, added (text or Markdown, at most 1 MiB) and deleted one by one.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Serialize;

use super::AppState;
use super::extract::{ApiJson, IdPath, shorten};
use crate::error::{ApiError, ErrorBody};
use crate::knowledge::{
    DocumentView, KnowledgeBaseDetail, KnowledgeBaseView, KnowledgeBases, KnowledgeChangeError,
    NewDocumentBody, NewKnowledgeBase,
};
use harnessx_runtime::store::MAX_DOCUMENT_BYTES;

/// The largest body `POST /v2/knowledge/{name}/documents` reads: a document's 1 MiB of text,
/// escaped in JSON, with room to spare.
pub const DOCUMENT_BODY_LIMIT: usize = 4 * MAX_DOCUMENT_BYTES + 64 * 1024;

/// The knowledge bases.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct KnowledgeBaseList {
    /// Every knowledge base, by name, with its document count.
    pub knowledge_bases: Vec<KnowledgeBaseView>,
}

impl From<KnowledgeChangeError> for ApiError {
    fn from(e: KnowledgeChangeError) -> Self {
        let message = e.to_string();
        match e {
            KnowledgeChangeError::Unknown(_) => {
                ApiError::not_found("unknown_knowledge_base", message)
            }
            KnowledgeChangeError::UnknownDocument { .. } => {
                ApiError::not_found("unknown_document", message)
            }
            KnowledgeChangeError::Exists(_) => {
                ApiError::new(StatusCode::CONFLICT, "knowledge_base_exists", message)
            }
            KnowledgeChangeError::InUse { .. } => {
                ApiError::new(StatusCode::CONFLICT, "knowledge_base_in_use", message)
            }
            KnowledgeChangeError::Invalid(_) => ApiError::unprocessable("invalid_setting", message),
            KnowledgeChangeError::TooLarge { .. } => {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "document_too_large", message)
            }
            KnowledgeChangeError::Unavailable => ApiError::new(
                StatusCode::NOT_IMPLEMENTED,
                "knowledge_unavailable",
                message,
            ),
            _ => {
                tracing::error!(error = %message, "knowledge store error");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store_unavailable",
                    "the store failed; nothing was changed, try again",
                )
            }
        }
    }
}

fn bases(state: &AppState) -> Result<&KnowledgeBases, ApiError> {
    state
        .agents
        .knowledge()
        .ok_or_else(|| KnowledgeChangeError::Unavailable.into())
}

/// Each knowledge base's agents (by their current versions), as `` `name` `` lists.
async fn attached(state: &AppState) -> Result<BTreeMap<String, Vec<String>>, ApiError> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for agent in state.agents.list().await? {
        for base in agent.knowledge_bases {
            out.entry(base).or_default().push(agent.id.clone());
        }
    }
    Ok(out)
}

/// Lists the knowledge bases with their document counts and the agents they are attached to.
#[utoipa::path(get, path = "/v2/knowledge", tag = "knowledge",
    responses(
        (status = 200, description = "The knowledge bases", body = KnowledgeBaseList),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
    ))]
pub(crate) async fn list_knowledge_bases(
    State(state): State<Arc<AppState>>,
) -> Result<Json<KnowledgeBaseList>, ApiError> {
    let attached = attached(&state).await?;
    Ok(Json(KnowledgeBaseList {
        knowledge_bases: bases(&state)?.list(&attached).await?,
    }))
}

/// Creates an empty knowledge base. Every server on the database sees it at once.
#[utoipa::path(post, path = "/v2/knowledge", tag = "knowledge",
    request_body = NewKnowledgeBase,
    responses(
        (status = 201, description = "The knowledge base", body = KnowledgeBaseView),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 409, description = "A knowledge base has this name", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "A value that cannot be used", body = ErrorBody),
    ))]
pub(crate) async fn create_knowledge_base(
    State(state): State<Arc<AppState>>,
    ApiJson(new): ApiJson<NewKnowledgeBase>,
) -> Result<(StatusCode, Json<KnowledgeBaseView>), ApiError> {
    Ok((StatusCode::CREATED, Json(bases(&state)?.create(new).await?)))
}

/// Reads a knowledge base with its documents (without their text).
#[utoipa::path(get, path = "/v2/knowledge/{name}", tag = "knowledge",
    params(("name" = String, Path, description = "The knowledge base's name")),
    responses(
        (status = 200, description = "The knowledge base and its documents", body = KnowledgeBaseDetail),
        (status = 400, description = "Not a name", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown knowledge base", body = ErrorBody),
    ))]
pub(crate) async fn get_knowledge_base(
    State(state): State<Arc<AppState>>,
    IdPath(name): IdPath,
) -> Result<Json<KnowledgeBaseDetail>, ApiError> {
    let agents = attached(&state).await?.remove(&name).unwrap_or_default();
    Ok(Json(bases(&state)?.get(&name, agents).await?))
}

/// Deletes a knowledge base and its documents; refused while agents have it attached.
#[utoipa::path(delete, path = "/v2/knowledge/{name}", tag = "knowledge",
    params(("name" = String, Path, description = "The knowledge base's name")),
    responses(
        (status = 200, description = "Deleted", body = Object),
        (status = 400, description = "Not a name", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown knowledge base", body = ErrorBody),
        (status = 409, description = "Agents have it attached", body = ErrorBody),
    ))]
pub(crate) async fn delete_knowledge_base(
    State(state): State<Arc<AppState>>,
    IdPath(name): IdPath,
) -> Result<Json<serde_json::Value>, ApiError> {
    let bases = bases(&state)?;
    if let Some(agents) = attached(&state).await?.remove(&name) {
        return Err(KnowledgeChangeError::InUse {
            name,
            agents: agents
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", "),
        }
        .into());
    }
    bases.delete(&name).await?;
    Ok(Json(serde_json::json!({"name": name, "deleted": true})))
}

/// Adds a document: `{title, text, format}` with `format` `text` (the default) or `markdown`
/// and at most 1 MiB of text. Runs search it from the moment it is added, on every server.
#[utoipa::path(post, path = "/v2/knowledge/{name}/documents", tag = "knowledge",
    params(("name" = String, Path, description = "The knowledge base's name")),
    request_body = NewDocumentBody,
    responses(
        (status = 201, description = "The document", body = DocumentView),
        (status = 400, description = "Malformed body or name", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown knowledge base", body = ErrorBody),
        (status = 413, description = "The text is over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "A value that cannot be used", body = ErrorBody),
    ))]
pub(crate) async fn add_document(
    State(state): State<Arc<AppState>>,
    IdPath(name): IdPath,
    body: Result<ApiJson<NewDocumentBody>, ApiError>,
) -> Result<(StatusCode, Json<DocumentView>), ApiError> {
    let ApiJson(body) = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "document_too_large",
                format!(
                    "the request body is over {DOCUMENT_BODY_LIMIT} bytes; a document's text may \
                     be at most {MAX_DOCUMENT_BYTES} bytes (1 MiB): split it into smaller documents"
                ),
            )
        } else {
            e
        }
    })?;
    let bases = bases(&state)?;
    Ok((
        StatusCode::CREATED,
        Json(bases.add_document(&name, body).await?),
    ))
}

/// Deletes one document of a knowledge base.
#[utoipa::path(delete, path = "/v2/knowledge/{name}/documents/{id}", tag = "knowledge",
    params(
        ("name" = String, Path, description = "The knowledge base's name"),
        ("id" = u64, Path, description = "The document's id"),
    ),
    responses(
        (status = 200, description = "Deleted", body = Object),
        (status = 400, description = "Not a name or not a document id", body = ErrorBody),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
        (status = 404, description = "Unknown knowledge base or document", body = ErrorBody),
    ))]
pub(crate) async fn delete_document(
    State(state): State<Arc<AppState>>,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let Path((name, raw)) =
        path.map_err(|e| ApiError::bad_request("invalid_path", e.body_text()))?;
    let id = match raw.parse::<u64>() {
        Ok(id) if id > 0 => id,
        _ => {
            return Err(ApiError::bad_request(
                "invalid_document_id",
                format!(
                    "`{}` is not a document id; document ids are positive integers (GET \
                     /v2/knowledge/{{name}} lists them)",
                    shorten(&raw)
                ),
            ));
        }
    };
    bases(&state)?.delete_document(&name, id).await?;
    Ok(Json(
        serde_json::json!({"name": name, "id": id, "deleted": true}),
    ))
}
