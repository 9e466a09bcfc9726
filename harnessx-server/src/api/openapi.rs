//! The OpenAPI document, generated from the handlers' `#[utoipa::path]` annotations.

use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

use crate::agents::{
    AgentPatch, AgentView, BuiltinToolState, BundleSetting, ConnectorSetting, NewAgent,
    PlatformTool,
};
use crate::error::{ErrorBody, ErrorDetail};

use super::agents::{AgentList, BuiltinTools};
use super::connectors::{
    ConnectorList, ConnectorStatus, ConnectorTool, ConnectorView, SignInStarted,
};
use super::conversations::{
    ConversationBody, ConversationItem, ConversationList, MessageBody, MessageOutcome,
};
use super::knowledge::KnowledgeBaseList;
use super::ops::Ready;
use super::pending::Pending;
use super::retention::{PruneBody, Pruned};
use super::runs::{AnswerBody, ApprovalBody, CreateRun, RunBody, RunList, SelectionBody};
use super::webhooks::{DeliveryList, WebhookList};
use crate::agent_tools::{AgentTool, AgentTools, ToolPermission, ToolSource, UnlistedConnector};
use crate::connectors::{
    ConnectorPatch, ConnectorSettings, ConnectorSpec, NewConnector, OAuthSettings,
};
use crate::knowledge::{
    DocumentFormatName, DocumentView, KnowledgeBaseDetail, KnowledgeBaseView, NewDocumentBody,
    NewKnowledgeBase,
};
use crate::webhooks::{
    AttemptView, CreatedWebhook, DeliveryView, NewWebhook, WebhookPatch, WebhookView,
};

#[derive(OpenApi)]
#[openapi(
    info(title = "harnessx runs API", description = "Durable agent runs: start, stream, answer, approve, cancel; conversations; agents, connectors, knowledge bases and webhooks."),
    paths(
        super::ops::healthz, super::ops::readyz,
        super::runs::create_run, super::runs::list_runs, super::runs::get_run,
        super::retention::prune_runs,
        super::events::events, super::runs::answer, super::runs::approval, super::runs::cancel,
        super::conversations::list_conversations, super::conversations::get_conversation,
        super::conversations::post_message,
        super::agents::list_agents, super::agents::create_agent, super::agents::get_agent,
        super::agents::patch_agent, super::agents::delete_agent, super::agents::agent_tools,
        super::agents::builtin_tools, super::connectors::list_connectors, super::connectors::create_connector,
        super::connectors::get_connector, super::connectors::patch_connector,
        super::connectors::delete_connector, super::connectors::sign_in,
        super::connectors::oauth_callback, super::knowledge::list_knowledge_bases,
        super::knowledge::create_knowledge_base, super::knowledge::get_knowledge_base,
        super::knowledge::delete_knowledge_base, super::knowledge::add_document,
        super::knowledge::delete_document, super::webhooks::list_webhooks,
        super::webhooks::create_webhook, super::webhooks::get_webhook,
        super::webhooks::patch_webhook, super::webhooks::delete_webhook,
        super::webhooks::list_deliveries, serve_openapi,
    ),
    components(schemas(
        ErrorBody, ErrorDetail, Ready, RunBody, RunList, CreateRun, AnswerBody, SelectionBody,
        PruneBody, Pruned,
        ApprovalBody, ConversationBody, Pending, MessageBody, MessageOutcome, AgentList,
        AgentView, AgentPatch, NewAgent, BuiltinToolState, BundleSetting, ConnectorSetting, PlatformTool,
        BuiltinTools, ConnectorList, ConnectorView, ConnectorTool, ConnectorStatus,
        ConnectorSettings, ConnectorSpec, NewConnector, ConnectorPatch, OAuthSettings,
        SignInStarted, KnowledgeBaseList, KnowledgeBaseView, KnowledgeBaseDetail,
        NewKnowledgeBase, NewDocumentBody, DocumentView, DocumentFormatName, ConversationList,
        ConversationItem, AgentTools, AgentTool, ToolSource, ToolPermission, UnlistedConnector,
        WebhookList, WebhookView, CreatedWebhook, NewWebhook, WebhookPatch, DeliveryList,
        DeliveryView, AttemptView,
    )),
    modifiers(&Bearer),
    security(("bearer" = [])),
)]
struct Doc;

struct Bearer;

impl utoipa::Modify for Bearer {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The OpenAPI document of the /v2 API.
///
/// ```
/// let doc = harnessx_server::api::openapi();
/// assert!(doc.paths.paths.contains_key("/v2/runs/{run_id}/answer"));
/// ```
pub fn openapi() -> utoipa::openapi::OpenApi {
    Doc::openapi()
}

/// This document.
#[utoipa::path(get, path = "/v2/openapi.json", tag = "health",
    responses(
        (status = 200, description = "The OpenAPI document", body = Object),
        (status = 401, description = "No or wrong API key", body = ErrorBody),
    ))]
pub(crate) async fn serve_openapi() -> axum::Json<utoipa::openapi::OpenApi> {
    axum::Json(openapi())
}
