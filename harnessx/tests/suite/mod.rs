//! One module per topic.

mod agent_builder;
mod agent_run;
mod agent_stream;
mod agent_support;
mod agent_typed;
mod engine_arguments;
mod engine_batch;
mod engine_common;
mod engine_dedupe;
mod engine_enum_arguments;
mod engine_fuzz;
mod engine_lanes;
mod engine_limits;
mod engine_names;
mod engine_permissions;
mod engine_prompts;
mod engine_registry;
mod engine_results;
mod engine_retry;
mod engine_timeouts;
mod ergonomics;
mod hooks_budget;
mod hooks_durable;
mod hooks_models;
mod hooks_support;
mod hooks_tools;
mod journal_support;
#[cfg(feature = "knowledge")]
mod knowledge;
#[cfg(feature = "mcp")]
mod mcp_agent;
#[cfg(feature = "mcp")]
mod mcp_failures;
#[cfg(feature = "mcp")]
mod mcp_filesystem;
#[cfg(feature = "mcp")]
mod mcp_hostile;
#[cfg(feature = "mcp")]
mod mcp_http;
#[cfg(all(feature = "mcp-oauth", feature = "mcp-server"))]
mod mcp_oauth;
#[cfg(feature = "mcp")]
mod mcp_servers;
#[cfg(feature = "mcp")]
mod mcp_stdio;
#[cfg(feature = "okf")]
mod okf;
mod planning;
#[cfg(feature = "providers")]
mod provider_anthropic;
#[cfg(feature = "providers")]
mod provider_common;
#[cfg(feature = "providers")]
mod provider_openai;
#[cfg(feature = "providers")]
mod provider_resilience;
#[cfg(feature = "skills")]
mod skills;
mod skills_folder;
mod subagent;
