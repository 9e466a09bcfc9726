mod ask_user;
mod bash_options;
mod bash_run;
mod bash_support;
mod sandbox_bubblewrap;
mod sandbox_local;
