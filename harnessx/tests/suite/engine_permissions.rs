//! The spec's permission precedence table, cell by cell, and the rules around it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use harnessx::{
    ApprovalDecision, PERMISSION_DENIED, PermissionLevel, PermissionManager, ToolCall,
    ToolErrorKind, ToolOptions, ToolRegistry,
};

use super::engine_common::counting_tool;

/// What happened to one call.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    /// Ran without asking.
    Allowed,
    /// The approval callback was asked (and allowed it).
    Asked,
    /// Refused without asking.
    Denied,
}

/// Registers `t` with `explicit` permission, runs it under a manager with `default` and a
/// callback that allows once, and reports what happened.
async fn observe(explicit: Option<PermissionLevel>, default: Option<PermissionLevel>) -> Seen {
    let (def, runs) = counting_tool("t", "ok");
    let registry = ToolRegistry::new();
    let mut opts = ToolOptions::new();
    if let Some(level) = explicit {
        opts = opts.permission(level);
    }
    registry.register_tool_with(def, opts).unwrap();
    let asked = Arc::new(AtomicUsize::new(0));
    let a = Arc::clone(&asked);
    let manager = default.map(|d| {
        PermissionManager::new(d).with_approval(move |_req| {
            a.fetch_add(1, Ordering::SeqCst);
            async { ApprovalDecision::AllowOnce }
        })
    });
    let result = registry
        .execute(&ToolCall::new("c", "t", "{}"), manager.as_ref())
        .await;
    match (
        result.is_error,
        asked.load(Ordering::SeqCst),
        runs.load(Ordering::SeqCst),
    ) {
        (false, 0, 1) => Seen::Allowed,
        (false, 1, 1) => Seen::Asked,
        (true, 0, 0) => {
            assert_eq!(result.content, PERMISSION_DENIED);
            assert_eq!(result.error_kind, Some(ToolErrorKind::PermissionDenied));
            Seen::Denied
        }
        other => panic!("unexpected outcome {other:?}: {result:?}"),
    }
}

use PermissionLevel::{Allow, Ask, Deny};

// Row: permission omitted. Columns: ordinary agent (no manager), manager default ASK, manager DENY.
#[tokio::test]
async fn omitted_under_ordinary_agent_is_allow() {
    assert_eq!(observe(None, None).await, Seen::Allowed);
}
#[tokio::test]
async fn omitted_under_ordinary_manager_is_allow() {
    assert_eq!(observe(None, Some(Allow)).await, Seen::Allowed);
}
#[tokio::test]
async fn omitted_under_default_ask_is_ask() {
    assert_eq!(observe(None, Some(Ask)).await, Seen::Asked);
}
#[tokio::test]
async fn omitted_under_default_deny_is_deny() {
    assert_eq!(observe(None, Some(Deny)).await, Seen::Denied);
}

// Row: explicit ALLOW.
#[tokio::test]
async fn explicit_allow_under_ordinary_agent() {
    assert_eq!(observe(Some(Allow), None).await, Seen::Allowed);
}
#[tokio::test]
async fn explicit_allow_under_default_ask() {
    assert_eq!(observe(Some(Allow), Some(Ask)).await, Seen::Allowed);
}
#[tokio::test]
async fn explicit_allow_under_default_deny() {
    assert_eq!(observe(Some(Allow), Some(Deny)).await, Seen::Allowed);
}

// Row: explicit ASK (with a callback present; without one it is denied, tested below).
#[tokio::test]
async fn explicit_ask_under_ordinary_manager_with_callback() {
    assert_eq!(observe(Some(Ask), Some(Allow)).await, Seen::Asked);
}
#[tokio::test]
async fn explicit_ask_under_default_ask() {
    assert_eq!(observe(Some(Ask), Some(Ask)).await, Seen::Asked);
}
#[tokio::test]
async fn explicit_ask_under_default_deny() {
    assert_eq!(observe(Some(Ask), Some(Deny)).await, Seen::Asked);
}

// Row: explicit DENY.
#[tokio::test]
async fn explicit_deny_under_ordinary_agent() {
    assert_eq!(observe(Some(Deny), None).await, Seen::Denied);
}
#[tokio::test]
async fn explicit_deny_under_default_ask() {
    assert_eq!(observe(Some(Deny), Some(Ask)).await, Seen::Denied);
}
#[tokio::test]
async fn explicit_deny_under_default_deny() {
    assert_eq!(observe(Some(Deny), Some(Deny)).await, Seen::Denied);
}

#[tokio::test]
async fn plain_agent_denies_ask_without_a_callback() {
    let (def, runs) = counting_tool("t", "ok");
    let registry = ToolRegistry::new();
    registry
        .register_tool_with(def, ToolOptions::new().permission(Ask))
        .unwrap();
    let result = registry.execute(&ToolCall::new("c", "t", "{}"), None).await;
    assert!(result.is_error);
    assert_eq!(result.content, "Permission denied");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // An explicit manager without a callback behaves the same.
    let pm = PermissionManager::new(Ask);
    let result = registry
        .execute(&ToolCall::new("c", "t", "{}"), Some(&pm))
        .await;
    assert_eq!(result.content, "Permission denied");
}

#[tokio::test]
async fn an_override_beats_every_row() {
    for explicit in [None, Some(Allow), Some(Ask), Some(Deny)] {
        for default in [Allow, Ask, Deny] {
            let pm = PermissionManager::new(default).with_override("t", Deny);
            assert_eq!(pm.effective_level("t", explicit), Deny);
            let pm = PermissionManager::new(default).with_override("t", Allow);
            assert_eq!(pm.effective_level("t", explicit), Allow);
            let (def, runs) = counting_tool("t", "ok");
            let registry = ToolRegistry::new();
            let mut opts = ToolOptions::new();
            if let Some(e) = explicit {
                opts = opts.permission(e);
            }
            registry.register_tool_with(def, opts).unwrap();
            let r = registry
                .execute(&ToolCall::new("c", "t", "{}"), Some(&pm))
                .await;
            assert!(!r.is_error, "{explicit:?}/{default:?}: {}", r.content);
            assert_eq!(runs.load(Ordering::SeqCst), 1);
        }
    }
}

#[tokio::test]
async fn deny_beats_an_earlier_session_grant() {
    let (def, runs) = counting_tool("t", "ok");
    let registry = ToolRegistry::new();
    registry.register_tool(def).unwrap();
    let pm =
        PermissionManager::new(Deny).with_approval(|_req| async { ApprovalDecision::AllowSession });
    pm.grant_session("t");
    let r = registry
        .execute(&ToolCall::new("c", "t", "{}"), Some(&pm))
        .await;
    assert_eq!(r.content, PERMISSION_DENIED);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_session_grant_satisfies_ask_without_another_prompt() {
    let (def, runs) = counting_tool("t", "ok");
    let registry = ToolRegistry::new();
    registry
        .register_tool_with(def, ToolOptions::new().permission(Ask))
        .unwrap();
    let asked = Arc::new(AtomicUsize::new(0));
    let a = Arc::clone(&asked);
    let pm = PermissionManager::new(Allow).with_approval(move |req| {
        assert_eq!(req.tool_name, "t");
        a.fetch_add(1, Ordering::SeqCst);
        async { ApprovalDecision::AllowSession }
    });
    for i in 0..3 {
        let r = registry
            .execute(&ToolCall::new(format!("c{i}"), "t", "{}"), Some(&pm))
            .await;
        assert!(!r.is_error);
    }
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "asked once, then the session grant applied"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert!(pm.has_session_grant("t"));
}

#[tokio::test]
async fn a_denied_approval_does_not_run_the_tool() {
    let (def, runs) = counting_tool("t", "ok");
    let registry = ToolRegistry::new();
    registry
        .register_tool_with(def, ToolOptions::new().permission(Ask))
        .unwrap();
    let pm = PermissionManager::new(Allow).with_approval(|_req| async { ApprovalDecision::Deny });
    let r = registry
        .execute(&ToolCall::new("c", "t", "{}"), Some(&pm))
        .await;
    assert_eq!(r.content, PERMISSION_DENIED);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(!pm.has_session_grant("t"));
}

#[tokio::test]
async fn approval_requests_carry_the_validated_arguments() {
    let registry = ToolRegistry::new();
    registry
        .register_tool_with(
            super::engine_common::sleeping_tool("s", 0),
            ToolOptions::new().permission(Ask),
        )
        .unwrap();
    let seen = Arc::new(std::sync::Mutex::new(None));
    let s = Arc::clone(&seen);
    let pm = PermissionManager::new(Allow).with_approval(move |req| {
        *s.lock().unwrap() = Some(req);
        async { ApprovalDecision::AllowOnce }
    });
    let r = registry
        .execute(&ToolCall::new("c9", "s", r#"{"tag":"x"}"#), Some(&pm))
        .await;
    assert_eq!(r.content, "x");
    let req = seen.lock().unwrap().clone().unwrap();
    assert_eq!(req.call_id, "c9");
    assert_eq!(req.arguments, serde_json::json!({"tag": "x"}));
    assert_eq!(req.description, "Sleep, then echo the tag.");
}
