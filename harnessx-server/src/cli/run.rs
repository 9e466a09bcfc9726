//! `harnessx run`: starts a run and follows its events, asking its questions at the prompt
//! (options by number or by label in any case, or the person's own words), its approvals as
//! y / a / N and its recovery questions as t / r / s. With nobody to answer (stdin closed) the
//! run is left waiting and the command says how to answer it later.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use futures::StreamExt;
use harnessx_runtime::RecoveryChoice;
use serde_json::Value;

use crate::api::{AnswerBody, CreateRun, SelectionBody};
use crate::client::{Client, ClientError};

use super::client::{Place, explain};
use super::terminal::shown;

/// A line typed at the prompt; `None` when the input is closed (end of file, or unreadable).
fn read_line(prompt: &str) -> Option<String> {
    out!("{prompt}");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    let read = tokio::task::block_in_place(|| std::io::stdin().lock().read_line(&mut line));
    match read {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_owned()),
    }
}

/// The labels `typed` picks among `labels`: comma-separated option numbers or labels (in any
/// case); `None` when any part is neither (the line is then the person's own words).
pub(crate) fn picked(typed: &str, labels: &[&str]) -> Option<Vec<String>> {
    if typed.trim().is_empty() {
        return None;
    }
    typed
        .split(',')
        .map(|part| {
            let part = part.trim();
            let by_number = part
                .parse::<usize>()
                .ok()
                .and_then(|n| labels.get(n.wrapping_sub(1)));
            by_number
                .or_else(|| labels.iter().find(|l| l.trim().eq_ignore_ascii_case(part)))
                .map(|l| (*l).to_owned())
        })
        .collect()
}

/// The options of a question, as labels.
fn labels_of(question: &Value) -> Vec<&str> {
    question["options"]
        .as_array()
        .map(|options| options.iter().filter_map(|o| o["label"].as_str()).collect())
        .unwrap_or_default()
}

/// Asks a question at the prompt; `None` when nobody can answer.
fn answer_question(pending: &Value) -> Option<AnswerBody> {
    let form = &pending["form"];
    if form["form"].as_str() == Some("simple") {
        outln!("\n? {}", shown(form["question"].as_str().unwrap_or("")));
        let choices: Vec<&str> = form["choices"]
            .as_array()
            .map(|c| c.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (i, c) in choices.iter().enumerate() {
            outln!("  {}. {}", i + 1, shown(c));
        }
        let line = read_line("> ")?;
        let text = match picked(&line, &choices) {
            Some(chosen) => chosen.join(", "),
            None => line,
        };
        return Some(AnswerBody::text(text));
    }
    let questions = form["questions"].as_array().cloned().unwrap_or_default();
    let mut answers = Vec::new();
    for q in &questions {
        outln!(
            "\n? [{}] {}",
            shown(q["header"].as_str().unwrap_or("")),
            shown(q["question"].as_str().unwrap_or(""))
        );
        if let Some(options) = q["options"].as_array() {
            for (i, o) in options.iter().enumerate() {
                let desc = o["description"]
                    .as_str()
                    .map(|d| format!(" — {}", shown(d)))
                    .unwrap_or_default();
                outln!(
                    "  {}. {}{desc}",
                    i + 1,
                    shown(o["label"].as_str().unwrap_or(""))
                );
            }
        }
        let line = read_line("> ")?;
        answers.push(match picked(&line, &labels_of(q)) {
            Some(selected) => SelectionBody {
                selected,
                text: None,
            },
            None => SelectionBody {
                selected: Vec::new(),
                text: Some(line),
            },
        });
    }
    Some(AnswerBody {
        answers: Some(answers),
        ..AnswerBody::default()
    })
}

/// Asks for an approval; `None` when nobody can answer. Anything typed but a clear yes (or
/// "a" for the conversation) is a no.
fn decide(pending: &Value) -> Option<&'static str> {
    let request = pending;
    let line = read_line(&format!(
        "\n! {} wants to run with {} — allow? [y = allow / a = conversation / N = deny] ",
        shown(request["tool_name"].as_str().unwrap_or("a tool")),
        shown(&request["arguments"].to_string())
    ))?;
    Some(super::runs::decision_name(&line).unwrap_or("deny"))
}

/// Asks a recovery question until a choice is typed; `None` when nobody can answer.
fn recover(pending: &Value) -> Option<RecoveryChoice> {
    outln!(
        "\n! `{}` with {} was cut off before its outcome was known.",
        shown(pending["tool_name"].as_str().unwrap_or("a tool")),
        shown(&pending["arguments"].to_string())
    );
    loop {
        let line = read_line(
            "  Did it take effect? [t = it took effect / r = run it again / s = skip it] ",
        )?;
        match line.to_ascii_lowercase().as_str() {
            "t" | "took-effect" | "took_effect" => {
                return Some(RecoveryChoice::TookEffect { result: None });
            }
            "r" | "run-again" | "run_again" => return Some(RecoveryChoice::RunAgain),
            "s" | "skip" => {
                return Some(RecoveryChoice::Skip {
                    note: String::new(),
                });
            }
            _ => outln!("  Type t, r or s."),
        }
    }
}

/// What to type later to answer what run `id` waits for (`kind`: `question`, `approval`,
/// `recovery`), and where else it can be answered.
pub(crate) fn answer_later(id: i64, kind: &str, conversation: &str, place: &Place) -> String {
    let flags = &place.flags;
    let command = match kind {
        "approval" => format!("harnessx approve {id} allow|conversation|deny{flags}"),
        "recovery" => format!("harnessx recover {id} took-effect|run-again|skip{flags}"),
        _ => format!(
            "harnessx answer {id} --select LABEL{flags}   (or: harnessx answer {id} \"your \
             words\"{flags})"
        ),
    };
    let console = match place.conversation_page(conversation) {
        Some(page) => format!("\n  or in the console: {page}"),
        None => format!("\n  or in the console of `harnessx serve{flags}`"),
    };
    format!("  {command}{console}")
}

/// How a start refused for an unknown agent is told: with the agents there are.
async fn unknown_agent(client: &Client, e: ClientError) -> String {
    if e.code != "unknown_agent" {
        return explain(e);
    }
    let message = e.message.split(';').next().unwrap_or_default().to_owned();
    match client.agents().await {
        Ok(list) if list.agents.is_empty() => {
            format!("{message}; the server has no agents yet")
        }
        Ok(list) => {
            let names: Vec<String> = list.agents.into_iter().map(|a| a.id).collect();
            format!("{message}; the agents are: {}", names.join(", "))
        }
        Err(_) => explain(e),
    }
}

/// `harnessx run`.
pub(crate) async fn run(
    client: &Client,
    place: &Place,
    agent: &str,
    prompt: &str,
    conversation: Option<String>,
    detach: bool,
) -> Result<ExitCode, String> {
    let mut start = CreateRun::new(agent, prompt);
    if let Some(c) = conversation {
        start = start.conversation(c);
    }
    let run = match client.start_run(&start).await {
        Ok(run) => run,
        Err(e) => return Err(unknown_agent(client, e).await),
    };
    let id = run.id;
    if detach {
        outln!("run {id} started ({})", shown(&run.state));
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("· run {id} of {}", shown(agent));
    let mut frames = client.events(id, 0).await.map_err(explain)?;
    let mut calls = std::collections::HashSet::new();
    while let Some(frame) = frames.next().await {
        let frame = frame.map_err(explain)?;
        let data = &frame.data;
        match frame.event.as_str() {
            "text_delta" => {
                out!("{}", shown(data["text"].as_str().unwrap_or("")));
                let _ = std::io::stdout().flush();
            }
            "tool_call_started" => {
                // A call the resumed run makes again (reading its answer back) is shown once.
                let call = data["call_id"].as_str().unwrap_or("").to_owned();
                if call.is_empty() || calls.insert(call) {
                    eprintln!(
                        "\n→ {}({})",
                        shown(data["name"].as_str().unwrap_or("")),
                        shown(data["arguments"].as_str().unwrap_or(""))
                    );
                }
            }
            "tool_result" => {
                let text = data["result"]["content"].as_str().unwrap_or("");
                let short: String = text.chars().take(120).collect();
                eprintln!("← {}", shown(&short));
            }
            "state" => eprintln!("· {}", shown(data["state"].as_str().unwrap_or(""))),
            kind @ ("question" | "approval" | "recovery") => {
                let pending = &data["pending"];
                if !reply(client, id, kind, pending).await? {
                    eprintln!(
                        "\n· nobody can answer here (the input is closed); run {id} is left \
                         waiting. Answer it later:\n{}",
                        shown(&answer_later(id, kind, &run.conversation, place))
                    );
                    return Ok(ExitCode::SUCCESS);
                }
            }
            "completed" => {
                outln!();
                return Ok(ExitCode::SUCCESS);
            }
            "failed" => {
                return Err(data["error"]
                    .as_str()
                    .unwrap_or("the run failed")
                    .to_owned());
            }
            _ => {}
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Asks what `pending` asks and sends the reply, again while the server says it does not fit;
/// `false` when nobody can answer.
async fn reply(client: &Client, id: i64, kind: &str, pending: &Value) -> Result<bool, String> {
    loop {
        let sent = match kind {
            "question" => {
                let Some(body) = answer_question(pending) else {
                    return Ok(false);
                };
                client.answer(id, &body).await
            }
            "approval" => {
                let Some(decision) = decide(pending) else {
                    return Ok(false);
                };
                client.approve(id, decision).await
            }
            _ => {
                let Some(choice) = recover(pending) else {
                    return Ok(false);
                };
                let body = AnswerBody {
                    recovery: Some(choice),
                    ..AnswerBody::default()
                };
                client.answer(id, &body).await
            }
        };
        match sent {
            Ok(_) => return Ok(true),
            Err(e) if e.code == "invalid_answer" => {
                eprintln!("{}; try again", shown(&e.message));
            }
            Err(e) => return Err(explain(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_picked_by_number_or_label_in_any_case() {
        let labels = ["Formally", "Casually"];
        assert_eq!(picked("2", &labels), Some(vec!["Casually".to_owned()]));
        assert_eq!(
            picked("casually", &labels),
            Some(vec!["Casually".to_owned()])
        );
        assert_eq!(
            picked(" FORMALLY , 2", &labels),
            Some(vec!["Formally".to_owned(), "Casually".to_owned()])
        );
        assert_eq!(picked("sideways", &labels), None);
        assert_eq!(picked("3", &labels), None);
        assert_eq!(picked("", &labels), None);
    }
}
