//! `harnessx run` (streams a run, asks questions at the prompt and approvals as y/n), `runs`,
//! `runs prune` and `answer`.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use serde_json::{Value, json};

use super::Reply;
use super::client::{Client, Frame};
use super::terminal::shown;

fn read_line(prompt: &str) -> String {
    print!("{prompt}");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    line.trim().to_owned()
}

/// The answer typed for a question: option numbers (`1`, `1,3`) pick options, anything else
/// is the person's own words.
fn answer_question(pending: &Value) -> Value {
    let form = &pending["form"];
    let questions: Vec<Value> = match form["form"].as_str() {
        Some("simple") => {
            println!("\n? {}", shown(form["question"].as_str().unwrap_or("")));
            let choices = form["choices"].as_array().cloned().unwrap_or_default();
            for (i, c) in choices.iter().enumerate() {
                println!("  {}. {}", i + 1, shown(c.as_str().unwrap_or("")));
            }
            return json!({"text": read_line("> ")});
        }
        _ => form["questions"].as_array().cloned().unwrap_or_default(),
    };
    let mut answers = Vec::new();
    for q in &questions {
        println!(
            "\n? [{}] {}",
            shown(q["header"].as_str().unwrap_or("")),
            shown(q["question"].as_str().unwrap_or(""))
        );
        let options = q["options"].as_array().cloned().unwrap_or_default();
        for (i, o) in options.iter().enumerate() {
            let desc = o["description"]
                .as_str()
                .map(|d| format!(" — {}", shown(d)))
                .unwrap_or_default();
            println!(
                "  {}. {}{desc}",
                i + 1,
                shown(o["label"].as_str().unwrap_or(""))
            );
        }
        let line = read_line("> ");
        let picked: Option<Vec<String>> = line
            .split(',')
            .map(|p| {
                p.trim()
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| options.get(n.wrapping_sub(1)))
                    .and_then(|o| o["label"].as_str().map(str::to_owned))
            })
            .collect();
        answers.push(match picked {
            Some(labels) if !labels.is_empty() => json!({"selected": labels}),
            _ => json!({"text": line}),
        });
    }
    json!({"answers": answers})
}

fn decide(pending: &Value) -> Value {
    let request = &pending["request"];
    let line = read_line(&format!(
        "\n! {} wants to run with {} — allow? [y = allow / a = conversation / N = deny] ",
        shown(request["tool_name"].as_str().unwrap_or("a tool")),
        shown(&request["arguments"].to_string())
    ));
    // Anything but a clear yes is a no.
    json!({"decision": decision_name(&line).unwrap_or("deny")})
}

/// `harnessx run`.
pub(crate) async fn run(
    client: &Client,
    agent: &str,
    prompt: &str,
    conversation: Option<String>,
    detach: bool,
) -> Result<ExitCode, String> {
    let mut body = json!({"agent": agent, "input": prompt});
    if let Some(c) = conversation {
        body["conversation"] = json!(c);
    }
    let run = client.post("/v2/runs", &body).await?;
    let id = run["id"].as_i64().ok_or("the server returned no run id")?;
    if detach {
        println!(
            "run {id} started ({})",
            shown(run["state"].as_str().unwrap_or(""))
        );
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("· run {id} of {}", shown(agent));
    let mut outcome: Result<ExitCode, String> = Ok(ExitCode::SUCCESS);
    let mut failure = None;
    client
        .follow(id, async |frame: Frame| {
            let data = &frame.data;
            match frame.event.as_str() {
                "text_delta" => {
                    print!("{}", shown(data["text"].as_str().unwrap_or("")));
                    let _ = std::io::stdout().flush();
                }
                "tool_call_started" => eprintln!(
                    "\n→ {}({})",
                    shown(data["name"].as_str().unwrap_or("")),
                    shown(data["arguments"].as_str().unwrap_or(""))
                ),
                "tool_result" => {
                    let text = data["result"]["content"].as_str().unwrap_or("");
                    let short: String = text.chars().take(120).collect();
                    eprintln!("← {}", shown(&short));
                }
                "state" => eprintln!("· {}", shown(data["state"].as_str().unwrap_or(""))),
                "question" => {
                    let body = answer_question(&data["pending"]);
                    if let Err(e) = client.post(&format!("/v2/runs/{id}/answer"), &body).await {
                        eprintln!("the answer was refused: {}", shown(&e));
                        failure = Some(e);
                        return false;
                    }
                }
                "approval" => {
                    let body = decide(&data["pending"]);
                    if let Err(e) = client.post(&format!("/v2/runs/{id}/approval"), &body).await {
                        failure = Some(e);
                        return false;
                    }
                }
                "recovery" => {
                    eprintln!(
                        "\n! run {id} needs a recovery decision about {}; answer it with `harnessx answer {id} ...`",
                        shown(data["pending"]["tool_name"].as_str().unwrap_or("a tool"))
                    );
                    return false;
                }
                "completed" => {
                    println!();
                    return false;
                }
                "failed" => {
                    failure = Some(data["error"].as_str().unwrap_or("the run failed").to_owned());
                    return false;
                }
                _ => {}
            }
            true
        })
        .await?;
    if let Some(e) = failure {
        outcome = Err(e);
    }
    outcome
}

/// `harnessx runs`.
pub(crate) async fn list(client: &Client) -> Result<ExitCode, String> {
    let list = client.get("/v2/runs").await?;
    println!("{:>6}  {:<14} {:<16} input", "id", "state", "agent");
    for run in list["runs"].as_array().cloned().unwrap_or_default() {
        let input: String = run["input"]
            .as_str()
            .unwrap_or("")
            .chars()
            .take(50)
            .collect();
        println!(
            "{:>6}  {:<14} {:<16} {}",
            run["id"],
            shown(run["state"].as_str().unwrap_or("")),
            shown(run["agent"].as_str().unwrap_or("")),
            shown(&input)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `harnessx runs prune --older-than AGE`.
pub(crate) async fn prune(
    client: &Client,
    older_than: std::time::Duration,
) -> Result<ExitCode, String> {
    let pruned = client
        .post(
            "/v2/runs/prune",
            &json!({"older_than_seconds": older_than.as_secs()}),
        )
        .await?;
    let deleted = pruned["deleted"].as_u64().unwrap_or(0);
    println!(
        "deleted {deleted} finished run{} (those that finished before {})",
        if deleted == 1 { "" } else { "s" },
        shown(pruned["finished_before"].as_str().unwrap_or("the cut-off"))
    );
    Ok(ExitCode::SUCCESS)
}

/// The API's name of a decision given on the command line: `allow` (`allow_once`),
/// `conversation` (`allow_for_conversation`; `always` too) or `deny`, in any case.
pub(crate) fn decision_name(given: &str) -> Result<&'static str, String> {
    match given.trim().to_ascii_lowercase().as_str() {
        "allow" | "allow_once" | "y" | "yes" => Ok("allow_once"),
        "conversation" | "allow_for_conversation" | "always" | "a" => Ok("allow_for_conversation"),
        "deny" | "n" | "no" => Ok("deny"),
        other => Err(format!(
            "`{other}` is not a decision; use allow (this call), conversation (this tool for the \
             rest of the conversation) or deny"
        )),
    }
}

/// `harnessx answer`.
pub(crate) async fn answer(client: &Client, run: i64, reply: Reply) -> Result<ExitCode, String> {
    let (path, body) = match reply {
        Reply::Text(text) => ("answer", json!({"text": text})),
        Reply::Select(labels) => ("answer", json!({"answers": [{"selected": labels}]})),
        Reply::Decision(d) => {
            let decision = decision_name(&d)?;
            ("approval", json!({"decision": decision}))
        }
    };
    let run = client
        .post(&format!("/v2/runs/{run}/{path}"), &body)
        .await?;
    println!(
        "run {} is {}",
        run["id"],
        shown(run["state"].as_str().unwrap_or(""))
    );
    Ok(ExitCode::SUCCESS)
}
