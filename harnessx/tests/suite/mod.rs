mod agent_builder;
mod agent_run;
mod agent_stream;
mod agent_support;
mod planning;
mod subagent;
