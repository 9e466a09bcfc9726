mod okf_ranking;
mod okf_v02;
