//! Concurrent ASK calls: one prompt per tool at a time, so a session grant answers the calls
//! waiting behind it, while "allow once" and "deny" answer only their own call.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use harnessx::{
    ApprovalDecision, PERMISSION_DENIED, PermissionLevel, PermissionManager, ToolCall, ToolOptions,
    ToolRegistry, ToolResult,
};

use super::engine_common::counting_tool;

/// What the approval callback saw: prompts in total, prompts open now, and the most open at once
/// for any one tool.
#[derive(Default)]
struct Prompts {
    asked: AtomicUsize,
    open: Mutex<std::collections::HashMap<String, usize>>,
    peak_per_tool: AtomicUsize,
    peak_total: AtomicUsize,
}

/// A manager whose callback records into `prompts`, stays open for a while (so concurrent calls
/// really overlap), and answers `decide(n)` to the n-th prompt (0-based).
fn counting_manager(
    prompts: &Arc<Prompts>,
    decide: impl Fn(usize) -> ApprovalDecision + Send + Sync + 'static,
) -> PermissionManager {
    let prompts = Arc::clone(prompts);
    let decide = Arc::new(decide);
    PermissionManager::new(PermissionLevel::Ask).with_approval(move |req| {
        let prompts = Arc::clone(&prompts);
        let decide = Arc::clone(&decide);
        async move {
            let n = prompts.asked.fetch_add(1, Ordering::SeqCst);
            {
                let mut open = prompts.open.lock().unwrap();
                let mine = open.entry(req.tool_name.clone()).or_default();
                *mine += 1;
                prompts.peak_per_tool.fetch_max(*mine, Ordering::SeqCst);
                let total: usize = open.values().sum();
                prompts.peak_total.fetch_max(total, Ordering::SeqCst);
            }
            tokio::time::sleep(Duration::from_millis(30)).await;
            *prompts
                .open
                .lock()
                .unwrap()
                .get_mut(&req.tool_name)
                .unwrap() -= 1;
            decide(n)
        }
    })
}

/// Runs `count` calls of each tool at once, every call a direct `execute` of its own.
async fn call_at_once(
    registry: &ToolRegistry,
    tools: &[&str],
    count: usize,
    pm: &PermissionManager,
) -> Vec<ToolResult> {
    let calls: Vec<ToolCall> = tools
        .iter()
        .flat_map(|t| (0..count).map(move |i| ToolCall::new(format!("{t}-{i}"), *t, "{}")))
        .collect();
    futures::future::join_all(calls.iter().map(|c| registry.execute(c, Some(pm)))).await
}

fn ask_registry(names: &[&str]) -> (ToolRegistry, Vec<Arc<AtomicUsize>>) {
    let registry = ToolRegistry::new();
    let runs = names
        .iter()
        .map(|name| {
            let (def, runs) = counting_tool(name, "ok");
            registry.register_tool(def).unwrap();
            runs
        })
        .collect();
    (registry, runs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_session_grant_answers_every_concurrent_call_of_the_tool() {
    let (registry, runs) = ask_registry(&["t"]);
    let prompts = Arc::new(Prompts::default());
    let pm = counting_manager(&prompts, |_| ApprovalDecision::AllowSession);
    let results = call_at_once(&registry, &["t"], 8, &pm).await;
    assert!(results.iter().all(|r| !r.is_error), "{results:?}");
    assert_eq!(
        prompts.asked.load(Ordering::SeqCst),
        1,
        "one prompt for all"
    );
    assert_eq!(runs[0].load(Ordering::SeqCst), 8);
    assert!(pm.has_session_grant("t"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_allow_once_each_waiting_call_gets_its_own_prompt_one_at_a_time() {
    let (registry, runs) = ask_registry(&["t"]);
    let prompts = Arc::new(Prompts::default());
    let pm = counting_manager(&prompts, |_| ApprovalDecision::AllowOnce);
    let results = call_at_once(&registry, &["t"], 5, &pm).await;
    assert!(results.iter().all(|r| !r.is_error));
    assert_eq!(prompts.asked.load(Ordering::SeqCst), 5);
    assert_eq!(prompts.peak_per_tool.load(Ordering::SeqCst), 1);
    assert_eq!(runs[0].load(Ordering::SeqCst), 5);
    assert!(!pm.has_session_grant("t"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_answers_only_its_own_call() {
    let (registry, runs) = ask_registry(&["t"]);
    let prompts = Arc::new(Prompts::default());
    // The first prompt is denied; the calls waiting behind it are asked again and allowed.
    let pm = counting_manager(&prompts, |n| {
        if n == 0 {
            ApprovalDecision::Deny
        } else {
            ApprovalDecision::AllowOnce
        }
    });
    let results = call_at_once(&registry, &["t"], 4, &pm).await;
    let denied: Vec<_> = results.iter().filter(|r| r.is_error).collect();
    assert_eq!(denied.len(), 1);
    assert_eq!(denied[0].content, PERMISSION_DENIED);
    assert_eq!(prompts.asked.load(Ordering::SeqCst), 4);
    assert_eq!(runs[0].load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn different_tools_are_asked_about_in_parallel() {
    let (registry, runs) = ask_registry(&["a", "b"]);
    let prompts = Arc::new(Prompts::default());
    let pm = counting_manager(&prompts, |_| ApprovalDecision::AllowSession);
    let results = call_at_once(&registry, &["a", "b"], 3, &pm).await;
    assert!(results.iter().all(|r| !r.is_error));
    assert_eq!(
        prompts.asked.load(Ordering::SeqCst),
        2,
        "one prompt per tool"
    );
    assert_eq!(prompts.peak_total.load(Ordering::SeqCst), 2);
    assert_eq!(prompts.peak_per_tool.load(Ordering::SeqCst), 1);
    assert!(runs.iter().all(|r| r.load(Ordering::SeqCst) == 3));
}

#[tokio::test]
async fn an_override_set_while_a_call_waits_decides_it_without_a_prompt() {
    let (registry, runs) = ask_registry(&["t"]);
    let asked = Arc::new(AtomicUsize::new(0));
    let base = PermissionManager::new(PermissionLevel::Ask);
    let host = base.clone();
    let count = Arc::clone(&asked);
    // While the first prompt is open, the host denies the tool outright; that prompt still
    // allows its own call.
    let pm = base.with_approval(move |_req| {
        count.fetch_add(1, Ordering::SeqCst);
        let host = host.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            host.set_override("t", PermissionLevel::Deny);
            tokio::time::sleep(Duration::from_millis(10)).await;
            ApprovalDecision::AllowOnce
        }
    });
    let (first, second) = (ToolCall::new("1", "t", "{}"), ToolCall::new("2", "t", "{}"));
    let (a, b) = tokio::join!(
        registry.execute(&first, Some(&pm)),
        registry.execute(&second, Some(&pm)),
    );
    assert!(!a.is_error, "{}", a.content);
    assert_eq!(b.content, PERMISSION_DENIED);
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert_eq!(runs[0].load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn registered_ask_tools_share_prompts_through_a_batch_too() {
    let registry = ToolRegistry::new();
    let (def, runs) = counting_tool("t", "ok");
    registry
        .register_tool_with(def, ToolOptions::new().permission(PermissionLevel::Ask))
        .unwrap();
    let prompts = Arc::new(Prompts::default());
    let pm = counting_manager(&prompts, |_| ApprovalDecision::AllowSession);
    let calls: Vec<_> = (0..4)
        .map(|i| ToolCall::new(format!("c{i}"), "t", "{}"))
        .collect();
    let results = registry.run(Some(pm)).execute_batch(&calls, None).await;
    assert!(results.iter().all(|r| !r.is_error));
    assert_eq!(prompts.asked.load(Ordering::SeqCst), 1);
    assert_eq!(runs.load(Ordering::SeqCst), 4);
}
