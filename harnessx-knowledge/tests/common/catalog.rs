//! A relevance set for OKF search: four bundles shaped like the public OKF bundles of Google
//! Cloud's knowledge catalog (`tables/`, `metrics/`, `computations/`, `playbooks/` folders,
//! `type: BigQuery Table`, `Metric`, `Attested Computation`, ...), of different sizes — finance
//! (large), sales, marketing, HR (small) — and queries with the concept each should find.
//! Shared by the ranking tests and the `okf_recall` bench.

use std::path::Path;

/// The bundles, largest first.
pub const BUNDLES: [&str; 4] = ["finance", "sales", "marketing", "hr"];

/// `(bundle, concept ID, type, title, description, tags, body)`.
type Spec = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

/// The hand-written concepts; [`write_catalog`] adds generated ones to make the sizes differ.
const CONCEPTS: &[Spec] = &[
    (
        "finance",
        "metrics/revenue",
        "Metric",
        "Revenue",
        "Recognized revenue for a fiscal period, per Finance's definition.",
        "finance, revenue",
        "Revenue is the sum of recognized amounts booked to the period, net of refunds and credits. It is computed by [the revenue computation](/computations/revenue.md) over the [general ledger](/tables/gl_entries.md).",
    ),
    (
        "finance",
        "metrics/ytd-revenue",
        "Metric",
        "Year-to-date revenue",
        "Recognized revenue from the first day of the fiscal year to the report date.",
        "finance, revenue, ytd",
        "Sums [revenue](/metrics/revenue.md) from the start of the fiscal year up to and including the report date. Used in the monthly close pack and the board deck.",
    ),
    (
        "finance",
        "metrics/revenue-legacy",
        "Metric",
        "Revenue (legacy definition)",
        "Gross bookings counted as revenue before the 2025 policy change.",
        "finance, revenue",
        "The old revenue definition counted gross bookings. Replaced by [revenue](/metrics/revenue.md).",
    ),
    (
        "finance",
        "metrics/gross-margin",
        "Metric",
        "Gross margin",
        "Revenue minus cost of goods sold, as a share of revenue.",
        "finance, margin",
        "Gross margin is (revenue - COGS) / revenue for the period. COGS comes from the [cost ledger](/tables/cogs.md).",
    ),
    (
        "finance",
        "metrics/operating-expenses",
        "Metric",
        "Operating expenses",
        "Selling, general and administrative spend for the period.",
        "finance, opex",
        "OPEX sums SG&A accounts from the general ledger, excluding depreciation.",
    ),
    (
        "finance",
        "metrics/ebitda",
        "Metric",
        "EBITDA",
        "Earnings before interest, taxes, depreciation and amortization.",
        "finance, profit",
        "EBITDA is operating income plus depreciation and amortization.",
    ),
    (
        "finance",
        "metrics/net-profit",
        "Metric",
        "Net profit",
        "Revenue minus all expenses, interest and taxes.",
        "finance, profit",
        "Net profit (net income) is the bottom line of the income statement.",
    ),
    (
        "finance",
        "metrics/free-cash-flow",
        "Metric",
        "Free cash flow",
        "Operating cash flow minus capital expenditure.",
        "finance, cash",
        "Free cash flow shows the cash left after investments in equipment and property.",
    ),
    (
        "finance",
        "metrics/dso",
        "Metric",
        "Days sales outstanding",
        "Average number of days it takes to collect payment after an invoice.",
        "finance, receivables",
        "DSO = accounts receivable / revenue x days in the period. High DSO means customers pay late.",
    ),
    (
        "finance",
        "metrics/budget-variance",
        "Metric",
        "Budget variance",
        "Actual spend compared with the approved budget, per cost center.",
        "finance, budget",
        "Variance is actual minus budget; a positive variance is an overspend.",
    ),
    (
        "finance",
        "tables/gl_entries",
        "BigQuery Table",
        "General ledger entries",
        "One row per journal line posted to the general ledger.",
        "finance, ledger",
        "Columns: account, cost_center, amount, posted_at. Every financial metric starts here.",
    ),
    (
        "finance",
        "tables/invoices",
        "BigQuery Table",
        "Invoices",
        "One row per customer invoice issued.",
        "finance, billing",
        "Columns: invoice_id, customer_id, amount_due, due_date, paid_at.",
    ),
    (
        "finance",
        "tables/cogs",
        "BigQuery Table",
        "Cost of goods sold",
        "Direct costs of the products sold, per order line.",
        "finance, cost",
        "Columns: order_line_id, unit_cost, quantity.",
    ),
    (
        "finance",
        "computations/revenue",
        "Attested Computation",
        "Revenue for fiscal year",
        "The sanctioned query for recognized revenue of a fiscal year.",
        "finance, revenue",
        "SELECT SUM(amount) FROM finance.recognized_revenue WHERE fiscal_year = @year",
    ),
    (
        "finance",
        "playbooks/month-end-close",
        "Playbook",
        "Month-end close",
        "Steps Finance follows to close the books each month.",
        "finance, close",
        "1. Reconcile bank accounts. 2. Accrue expenses. 3. Review the revenue and margin figures. 4. Lock the period in the ledger.",
    ),
    (
        "finance",
        "policies/expense-reimbursement",
        "Policy",
        "Expense reimbursement",
        "How employees claim back business expenses.",
        "finance, expenses",
        "Submit receipts in the expense tool within 30 days; managers approve claims; Finance pays them in the next payroll.",
    ),
    (
        "sales",
        "metrics/pipeline-coverage",
        "Metric",
        "Pipeline coverage",
        "Open pipeline value divided by the remaining quota for the quarter.",
        "sales, pipeline",
        "Coverage of 3x or more is healthy. Open pipeline comes from [opportunities](/tables/opportunities.md).",
    ),
    (
        "sales",
        "metrics/win-rate",
        "Metric",
        "Win rate",
        "Share of closed opportunities that were won.",
        "sales, deals",
        "Win rate = won deals / (won + lost deals) over the period.",
    ),
    (
        "sales",
        "metrics/average-deal-size",
        "Metric",
        "Average deal size",
        "Mean contract value of won deals.",
        "sales, deals",
        "Average deal size is total bookings divided by the number of won deals.",
    ),
    (
        "sales",
        "metrics/quota-attainment",
        "Metric",
        "Quota attainment",
        "Bookings of a sales rep as a share of their quota.",
        "sales, quota",
        "Attainment above 100% earns accelerators in the commission plan.",
    ),
    (
        "sales",
        "metrics/bookings",
        "Metric",
        "Bookings",
        "Total contract value signed in the period.",
        "sales, revenue",
        "Bookings count signed contracts; revenue is recognized later by Finance.",
    ),
    (
        "sales",
        "metrics/sales-cycle",
        "Metric",
        "Sales cycle length",
        "Days from opportunity creation to close.",
        "sales, deals",
        "Measured on won deals only; the median is reported.",
    ),
    (
        "sales",
        "tables/opportunities",
        "BigQuery Table",
        "Opportunities",
        "One row per sales opportunity in the CRM.",
        "sales, crm",
        "Columns: opportunity_id, account_id, stage, amount, close_date, owner.",
    ),
    (
        "sales",
        "tables/accounts",
        "BigQuery Table",
        "Accounts",
        "One row per customer account in the CRM.",
        "sales, crm",
        "Columns: account_id, name, segment, region, owner.",
    ),
    (
        "sales",
        "playbooks/discount-approval",
        "Playbook",
        "Discount approval",
        "Who approves discounts above the standard price list.",
        "sales, pricing",
        "Discounts up to 10% need the sales manager; above 20% the CFO signs off.",
    ),
    (
        "sales",
        "policies/commission-plan",
        "Policy",
        "Commission plan",
        "How sales reps are paid commission on bookings.",
        "sales, compensation",
        "Reps earn 8% of bookings up to quota and 12% above it.",
    ),
    (
        "marketing",
        "metrics/cac",
        "Metric",
        "Customer acquisition cost",
        "Sales and marketing spend per new customer won.",
        "marketing, cost",
        "CAC = (marketing spend + sales spend) / new customers in the period.",
    ),
    (
        "marketing",
        "metrics/mql",
        "Metric",
        "Marketing qualified leads",
        "Leads that meet the scoring threshold for sales follow-up.",
        "marketing, leads",
        "An MQL has a lead score of 60 or more.",
    ),
    (
        "marketing",
        "metrics/conversion-rate",
        "Metric",
        "Lead conversion rate",
        "Share of leads that become opportunities.",
        "marketing, funnel",
        "Conversion rate = opportunities created / leads in the period.",
    ),
    (
        "marketing",
        "metrics/roas",
        "Metric",
        "Return on ad spend",
        "Revenue attributed to ads divided by ad spend.",
        "marketing, ads",
        "ROAS uses last-touch attribution from the campaign table.",
    ),
    (
        "marketing",
        "tables/campaigns",
        "BigQuery Table",
        "Campaigns",
        "One row per marketing campaign with its budget and channel.",
        "marketing, campaigns",
        "Columns: campaign_id, channel, budget, start_date, end_date.",
    ),
    (
        "marketing",
        "tables/web-sessions",
        "BigQuery Table",
        "Web sessions",
        "One row per website session from analytics.",
        "marketing, web",
        "Columns: session_id, source, medium, landing_page, started_at.",
    ),
    (
        "marketing",
        "playbooks/campaign-launch",
        "Playbook",
        "Campaign launch checklist",
        "Steps before a campaign goes live.",
        "marketing, campaigns",
        "Check tracking links, budget caps and the landing page before launch.",
    ),
    (
        "hr",
        "metrics/headcount",
        "Metric",
        "Headcount",
        "Number of employees on the payroll at the end of the period.",
        "hr, people",
        "Counts full-time and part-time employees; contractors are excluded.",
    ),
    (
        "hr",
        "metrics/attrition",
        "Metric",
        "Employee attrition",
        "Share of employees who left during the period.",
        "hr, people",
        "Attrition = leavers / average headcount, annualized.",
    ),
    (
        "hr",
        "metrics/time-to-hire",
        "Metric",
        "Time to hire",
        "Days from job opening to accepted offer.",
        "hr, recruiting",
        "Measured per role; the median is reported.",
    ),
    (
        "hr",
        "policies/paid-time-off",
        "Policy",
        "Paid time off",
        "How many vacation days employees get and how to book them.",
        "hr, leave",
        "Employees get 25 days of paid vacation a year; book them in the HR tool two weeks ahead.",
    ),
    (
        "hr",
        "policies/parental-leave",
        "Policy",
        "Parental leave",
        "Leave for new parents.",
        "hr, leave",
        "New parents get 16 weeks of paid leave.",
    ),
];

/// `(query, bundle, expected concept ID)`: what a person would ask, and the concept that
/// answers it.
pub const QUERIES: &[(&str, &str, &str)] = &[
    ("year to date revenue", "finance", "metrics/ytd-revenue"),
    (
        "revenue for the fiscal year so far",
        "finance",
        "metrics/ytd-revenue",
    ),
    (
        "what is our gross margin",
        "finance",
        "metrics/gross-margin",
    ),
    (
        "how long do customers take to pay invoices",
        "finance",
        "metrics/dso",
    ),
    ("days sales outstanding", "finance", "metrics/dso"),
    (
        "earnings before interest and taxes",
        "finance",
        "metrics/ebitda",
    ),
    ("net profit for the year", "finance", "metrics/net-profit"),
    (
        "cash left after capital expenditure",
        "finance",
        "metrics/free-cash-flow",
    ),
    (
        "spend compared with the budget",
        "finance",
        "metrics/budget-variance",
    ),
    (
        "journal lines in the general ledger",
        "finance",
        "tables/gl_entries",
    ),
    (
        "steps to close the books at month end",
        "finance",
        "playbooks/month-end-close",
    ),
    (
        "how do I get my expenses reimbursed",
        "finance",
        "policies/expense-reimbursement",
    ),
    (
        "sanctioned query for revenue",
        "finance",
        "computations/revenue",
    ),
    (
        "pipeline coverage for the quarter",
        "sales",
        "metrics/pipeline-coverage",
    ),
    ("what share of deals do we win", "sales", "metrics/win-rate"),
    ("average deal size", "sales", "metrics/average-deal-size"),
    (
        "quota attainment of a rep",
        "sales",
        "metrics/quota-attainment",
    ),
    (
        "who approves a discount",
        "sales",
        "playbooks/discount-approval",
    ),
    (
        "commission on bookings",
        "sales",
        "policies/commission-plan",
    ),
    (
        "how long is the sales cycle",
        "sales",
        "metrics/sales-cycle",
    ),
    ("opportunities in the crm", "sales", "tables/opportunities"),
    ("cost to acquire a customer", "marketing", "metrics/cac"),
    ("marketing qualified leads", "marketing", "metrics/mql"),
    (
        "lead conversion rate",
        "marketing",
        "metrics/conversion-rate",
    ),
    ("return on ad spend", "marketing", "metrics/roas"),
    (
        "checklist before a campaign launch",
        "marketing",
        "playbooks/campaign-launch",
    ),
    ("number of employees", "hr", "metrics/headcount"),
    ("employee attrition", "hr", "metrics/attrition"),
    (
        "how many vacation days do I get",
        "hr",
        "policies/paid-time-off",
    ),
    ("leave for new parents", "hr", "policies/parental-leave"),
    ("time to hire for a role", "hr", "metrics/time-to-hire"),
];

/// Generated concepts per bundle, so the bundles differ in size as real ones do: a finance
/// catalog has a table per ledger extract, an HR one a handful of policies.
const FILLER: [(&str, usize); 4] = [
    ("finance", 120),
    ("sales", 40),
    ("marketing", 12),
    ("hr", 0),
];

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a concept file has a folder"))
        .expect("create the concept's folder");
    std::fs::write(path, text).expect("write the concept");
}

/// Writes the four bundles under `root` (`root/finance`, ...).
pub fn write_catalog(root: &Path) {
    for (bundle, id, kind, title, description, tags, body) in CONCEPTS {
        let status = if id.ends_with("-legacy") {
            "status: deprecated\n"
        } else {
            "status: stable\n"
        };
        write(
            &root.join(bundle).join(format!("{id}.md")),
            &format!(
                "---\ntype: {kind}\ntitle: \"{title}\"\ndescription: \"{description}\"\n\
                 tags: [{tags}]\n{status}generated: {{ by: reference_agent/catalog, at: 2026-05-28T14:30:00Z }}\n---\n\n\
                 # Definition\n\n{body}\n\n# Notes\n\nThis concept is maintained by the {bundle} \
                 data team for reporting in the quarterly business review and in the dashboards \
                 that are shared with the leadership team.\n"
            ),
        );
    }
    const AREAS: [&str; 8] = [
        "north",
        "south",
        "east",
        "west",
        "central",
        "online",
        "retail",
        "wholesale",
    ];
    for (bundle, count) in FILLER {
        for i in 0..count {
            let area = AREAS[i % AREAS.len()];
            write(
                &root.join(bundle).join(format!("tables/extract_{i:03}.md")),
                &format!(
                    "---\ntype: BigQuery Table\ntitle: \"{bundle} extract {i} ({area})\"\n\
                     description: \"Daily {bundle} extract for the {area} region, partition {i}.\"\n\
                     tags: [{bundle}, extract]\n---\n\n# Schema\n\nOne row per record of the \
                     {area} region for the day, loaded by the nightly pipeline from the source \
                     system. Amounts are in US dollars and dates in UTC. The data is used for \
                     the reports of the period and for reconciliations.\n"
                ),
            );
        }
    }
}
