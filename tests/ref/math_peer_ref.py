#!/usr/bin/env python3
"""The math reward's corpus judged by a peer: Hugging Face's math-verify
(PyPI `math-verify`), the verifier open-r1 and TRL's recipes grade with.

Writes tests/corpora/math_peer.jsonl: one case a line, {"class", "answer"
(the gold, as a task holds it), "response", "peer" (math-verify's verdict,
0 or 1)}. The cases are tern's own, a few dozen per class of answer the
math reward was found to misjudge (issue 50): finding the answer, '=' and
relations, equations, matrices, tuples, numbers, sets and intervals,
fractions, percentages and expressions. tests/plugins/test_math_peer.c
reads the file and reports tern's agreement with the peer, class by class.

Both sides are parsed as math-verify's own tests parse them: LaTeX (a
boxed answer first) and plain expressions, 6 digits of float rounding,
strict. CI never runs this script: the verdicts are committed.

    python3 -m venv /tmp/mv && /tmp/mv/bin/pip install math-verify==0.9.0
    /tmp/mv/bin/python tests/ref/math_peer_ref.py
"""
import json
import os
import sys

from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify
from importlib.metadata import version


CASES = {
    # where the answer is: a last $...$ span, a boxed answer, an answer
    # sentence, a worked solution as gold, digits inside a word
    "finding": [
        ("3.5", "Le prix est 3,5 euros."),
        (r"$(2, 2), (4, 1)$", r"$$\boxed{(2, 2)} \text{ in the first case and } \boxed{(4, 1)}$$"),
        (r"$(1, 2), (3, 4)$", r"$\boxed{(1, 2)} \quad \text{and} \quad \boxed{(3, 4)}$"),
        (r"$1, -2$", r"\(\boxed{1}\) and \(\boxed{-2}\)."),
        (r"$1, -2$", r"\(\boxed{1}\), which we reject, then \(\boxed{-2}\)."),
        ("5", r"The answer is $\boxed{5}$ or maybe $\boxed{6}$."),
        (r"$1, 2$", r"$\boxed{1}$, $\boxed{2}$"),
        ("8", r"Area: $8$ square units"),
        ("3", r"There are $3$ ways, and then 2 of them are removed."),
        ("4", r"Using the second term, $a_2 = 4$."),
        ("12", "So the answer is 12."),
        ("6", r"We find $x = 3$; checking, $3 + 3 = 6$ holds."),
        (r"$y \leq 2$", r"So $y \leq 2$ holds."),
        (r"$y \leq 2$", r"So $y \leq 3$ holds."),
        (r"$(4, 9)$", r"Putting both together, the point is $(4, 9)$."),
        (r"$(4, 9)$", r"Putting both together, the point is $(9, 4)$."),
        ("48", r"Final answer: the area of $PQRS$ is 48."),
        ("48", r"Final answer: the area of $PQRS$ is 47."),
        ("7", "The code word is QX7Z."),
        ("7", "The code word is seven letters long, so 7."),
        (r"$3, 5$", r"The roots are $\boxed{3}$ and $\boxed{5}$."),
        ("12", r"Hence $\boxed{12}$. The final answer is 13 if we count the box."),
        (r"First compute the share: $0.15 = 15\%$. The final answer is $15\%$", r"$\boxed{15\%}$"),
        (r"First compute the share: $0.15 = 15\%$. The final answer is $15\%$", r"$\boxed{16\%}$"),
        (r"$x = 5$", r"Solving the equation we get $x = 5$."),
        (r"$\frac{3}{4}$", r"The probability is therefore $\frac{3}{4}$, as computed."),
        ("10", "It takes 10 minutes."),
        (r"$2\sqrt{2}$", r"Hence the distance is $2\sqrt{2}$ units."),
        ("-3", r"The minimum value is $-3$."),
        (r"$\pi$", r"The answer: $\pi$"),
        ("5", "There are five of them."),
        ("21", r"We add $10 + 11 = 21$, so there are 21 marbles."),
        ("21", r"We add $10 + 11 = 21$, so there are 22 marbles."),
        ("6", r"\[ 2 \cdot 3 = 6 \]"),
        ("9", r"The last step gives \(9\)."),
        ("9", r"Answer: \( 8 \)"),
        ("100", "The total cost is $100."),
        (r"\boxed{18}", r"After simplifying, $\boxed{18}$ is the count."),
        (r"\boxed{18}", r"After simplifying, $\boxed{17}$ is the count."),
        ("2", r"First $\boxed{1}$, then correcting myself, $\boxed{2}$."),
        ("4", r"The value of $a$ is $4$, and of $b$ is $7$."),
        ("7", r"The value of $a$ is $4$, and of $b$ is $7$."),
        # a gold's boxes join as math-verify joins them; a response's only
        # when nothing but separators or the next box's name stand between
        (r"\boxed{3} cats and \boxed{4} dogs", r"$\boxed{3, 4}$"),
        (r"\boxed{3} cats and \boxed{4} dogs", r"$\boxed{4}$"),
        (r"\boxed{3} so so so so so \boxed{4}", r"$\boxed{4}$"),
        (r"$x = 2, y = 5$", r"So $x = \boxed{2}$ and $y = \boxed{5}$."),
        (r"$x = 2, y = 5$", r"So $x = \boxed{2}$ and $y = \boxed{6}$."),
        # a "final answer is $X$" after the last box, the Minerva format
        ("15", r"First $3 \cdot 4 = \boxed{12}$ apples; with the 3 left, $12 + 3 = 15$. "
               r"Final Answer: The final answer is $15$. I hope it is correct."),
        ("12", r"First $3 \cdot 4 = \boxed{12}$ apples; with the 3 left, $12 + 3 = 15$. "
               r"Final Answer: The final answer is $15$. I hope it is correct."),
        # a command whose backslash was escaped twice (copied out of a string)
        (r"$\\frac{1}{2}$", r"$\boxed{\frac12}$"),
        (r"$\sqrt{2}$", r"$\\boxed{\\sqrt{2}}$"),
        (r"$\\left( 1, \\frac{1}{2} \\right)$", r"$\boxed{(1, 0.5)}$"),
    ],
    # an '=' that is part of a relation or a subscript    ],
    # an '=' that is part of a relation or a subscript, an equation as the answer
    "equals": [
        (r"$y = 9$", r"$y = 2+3+4 = 9$"),
        (r"$y = 9$", r"$y = 2+3+4 = 10$"),
        (r"$\frac{1}{3}$", r"$x = \frac{1}{3} \approx 0.33$"),
        ("12", r"$x \approx 12$"),
        ("7", r"$\boxed{a+b=7}$"),
        (r"$a+b=7$", r"$\boxed{7}$"),
        (r"$x \le 5$", r"$\boxed{x < 5}$"),
        (r"$x \ne 3$", r"$\boxed{x \neq 4}$"),
        (r"$x \geq 3$", r"$\boxed{x \geq 3}$"),
        (r"$x \geq 3$", r"$\boxed{x >= 3}$"),
        (r"$x \leq -1$", r"$\boxed{x <= -1}$"),
        (r"$3x-2y+5=0$", r"The line is $3x-2y+5=0$."),
        (r"$3x-2y+5=0$", r"$\boxed{3x-2y+5=0}$"),
        (r"$3x-2y+5=0$", r"$\boxed{0}$"),
        ("10", r"$\sum_{k=0}^{4} k = 10$"),
        ("10", r"$\boxed{\sum_{k=0}^{4} k}$"),
        ("4", r"$x_{n=2} = 4$"),
        (r"$y = 2x + 1$", r"$\boxed{y = 2x + 1}$"),
        (r"$y = 2x + 1$", r"$\boxed{y = 2x - 1}$"),
        ("5", r"$\boxed{x = 5}$"),
        ("5", r"$\boxed{x = 6}$"),
        (r"$a = 3$", r"$\boxed{3}$"),
        (r"$k \neq 2$", r"$\boxed{k \ne 2}$"),
    ],
    # equations and inequalities compared as relations
    "relations": [
        (r"$12 = 3a + b$", r"$\boxed{3a + b}$"),
        (r"$x_{1}=4,\quadx_{2}=5$", r"$\boxed{4} \quad \text{and} \quad \boxed{5}$"),
        (r"$|AB| = 5$", r"$\boxed{5}$"),
        (r"$3x + 6 = 0$", r"$\boxed{x = -2}$"),
        (r"$y = 3x$", r"$\boxed{y = 3x + 1}$"),
        (r"$x<3$", r"$\boxed{-x<-3}$"),
        (r"$2x \ge 4$", r"$\boxed{x \ge 2}$"),
        (r"$(a,b)=(2,3)$", r"$\boxed{(a,b)=(2,3)}$"),
        (r"$(a,b)=(2,3)$", r"$\boxed{(a,b)=(3,2)}$"),
        (r"$x+2y-4=0$", r"$\boxed{y=2-\frac{x}{2}}$"),
        (r"$x+2y-4=0$", r"$\boxed{y=2+\frac{x}{2}}$"),
        (r"$x<3$", r"$\boxed{-x>-3}$"),
        (r"$x<3$", r"$\boxed{3>x}$"),
        (r"$x<3$", r"$\boxed{x>3}$"),
        (r"$x \neq 2$", r"$\boxed{x != 2}$"),
        (r"$(a,b)=(1,4)$", r"$\boxed{(1,4)}$"),
        (r"$(a,b)=(1,4)$", r"$\boxed{(4,1)}$"),
        (r"$PQ=3, RS=7$", r"$\boxed{3, 7}$"),
        (r"$2x = 6$", r"$\boxed{x = 3}$"),
        (r"$x \ge 1$", r"$\boxed{1 \le x}$"),
        (r"$x > 0$", r"$\boxed{x \geq 0}$"),
        (r"$y = x^2$", r"$\boxed{x^2 = y}$"),
        (r"$x = 2$", r"$\boxed{2}$"),
        (r"$2 < x < 5$", r"$\boxed{(2, 5)}$"),
        # ratios, and a ratio or quotient of names given its value
        (r"$3:5$", r"$\boxed{6:10}$"),
        (r"$3:5$", r"$\boxed{3:4}$"),
        (r"$a:b=3:5$", r"$\boxed{\frac{3}{5}}$"),
        (r"$\frac{AB}{CD}=\frac{2}{3}$", r"$\boxed{\frac{2}{3}}$"),
        (r"$\frac{AB}{CD}=\frac{2}{3}$", r"$\boxed{\frac{3}{2}}$"),
        (r"$S_{ABC}:S_{ABD}=1:4$", r"$\boxed{1:4}$"),
    ],
    "matrices": [    ],
    "matrices": [
        (r"$\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}$",
         r"$\left[\begin{array}{cc} 1 & 2 \\ 3 & 4 \end{array}\right]$"),
        (r"$\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}$",
         r"$\boxed{\begin{pmatrix} 1 & 2 \\ 3 & 4 \\ \end{pmatrix}}$"),
        (r"$\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}$",
         r"$\boxed{\begin{pmatrix} 1 & 2 & 3 \\ 4 & 5 & 6 \end{pmatrix}}$"),
        (r"$\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}$", r"$\boxed{(1, 2, 3, 4)}$"),
        (r"$\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}$",
         r"$\boxed{\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}}$"),
        (r"$\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}$",
         r"$\boxed{\begin{bmatrix} 1 & 2 \\ 3 & 4 \end{bmatrix}}$"),
        (r"$\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}$",
         r"$\boxed{\begin{pmatrix} 1 & 2 \\ 4 & 3 \end{pmatrix}}$"),
        (r"$\begin{pmatrix} 3 \\ -1 \end{pmatrix}$", r"$\boxed{\begin{pmatrix} 3 \\ -1 \end{pmatrix}}$"),
        (r"$\begin{pmatrix} 3 \\ -1 \end{pmatrix}$", r"$\boxed{\begin{pmatrix} 3 \\ 1 \end{pmatrix}}$"),
        (r"$\begin{pmatrix} \frac{1}{2} \\ 0 \end{pmatrix}$",
         r"$\boxed{\begin{pmatrix} 0.5 \\ 0 \end{pmatrix}}$"),
        (r"$\begin{pmatrix} 2 & 0 \\ 0 & 2 \end{pmatrix}$",
         r"$\boxed{\begin{pmatrix} 1+1 & 0 \\ 0 & 2 \end{pmatrix}}$"),
        (r"$\begin{pmatrix} 1 & 0 \end{pmatrix}$", r"$\boxed{\begin{pmatrix} 0 & 1 \end{pmatrix}}$"),
        (r"$\begin{bmatrix} 5 & 6 \end{bmatrix}$", r"$\boxed{\begin{pmatrix} 5 & 6 \end{pmatrix}}$"),
        (r"$\begin{pmatrix} x \\ 2x \end{pmatrix}$", r"$\boxed{\begin{pmatrix} x \\ x+x \end{pmatrix}}$"),
        # sums, products and multiples of matrices
        (r"$\begin{pmatrix} 4 & 4 \\ 4 & 4 \end{pmatrix}$",
         r"$\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix} + \begin{pmatrix} 3 & 2 \\ 1 & 0 \end{pmatrix}$"),
        (r"$\begin{pmatrix} 4 & 4 \\ 4 & 5 \end{pmatrix}$",
         r"$\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix} + \begin{pmatrix} 3 & 2 \\ 1 & 0 \end{pmatrix}$"),
        (r"$\begin{pmatrix} 2 & 1 \\ 4 & 3 \end{pmatrix}$",
         r"$\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix} \begin{pmatrix} 0 & 1 \\ 1 & 0 \end{pmatrix}$"),
        (r"$\begin{pmatrix} 3 & 4 \\ 1 & 2 \end{pmatrix}$",
         r"$\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix} \begin{pmatrix} 0 & 1 \\ 1 & 0 \end{pmatrix}$"),
        (r"$\begin{pmatrix} 5 \\ 11 \end{pmatrix}$",
         r"$\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix} \begin{pmatrix} 1 \\ 2 \end{pmatrix}$"),
        (r"$\begin{pmatrix} 3 & 6 \\ 9 & 12 \end{pmatrix}$",
         r"$3 \begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}$"),
        (r"$\begin{pmatrix} -2 & 0 \\ 2 & 4 \end{pmatrix}$",
         r"$\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix} - \begin{pmatrix} 3 & 2 \\ 1 & 0 \end{pmatrix}$"),
    ],
    # tuples, lists, ';' separated    ],
    # tuples, lists, ';' separated
    "tuples": [
        (r"$(1, 2)$", r"$\boxed{(1, 2, 3)}$"),
        (r"$(1; 2)$", r"$\boxed{(1; 3)}$"),
        (r"$(1, 2)$", r"$\boxed{(1, 2)}$"),
        (r"$(1, 2)$", r"$\boxed{(2, 1)}$"),
        (r"$(1; 2)$", r"$\boxed{(1, 2)}$"),
        (r"$(1, 2, 3)$", r"$\boxed{(1,2,3)}$"),
        (r"$(\frac{1}{2}, 3)$", r"$\boxed{(0.5, 3)}$"),
        (r"$1, 2, 3$", r"$\boxed{3, 2, 1}$"),
        (r"$1, 2, 3$", r"$\boxed{1, 2}$"),
        (r"$(-1, 4)$", r"The solution is $(x, y) = (-1, 4)$."),
        (r"$(3, \frac{\pi}{2})$", r"$\boxed{\left( 3, \frac{\pi}{2} \right)}$"),
        (r"$(2, 3)$", r"$\boxed{[2, 3]}$"),
        (r"$2, 4$", r"$\boxed{2 \text{ and } 4}$"),
        (r"$x = 1, x = 2$", r"$\boxed{1, 2}$"),
        # solutions written as assignments, one pair after another
        (r"$a=1,b=3;a=2,b=5$", r"$\boxed{(1,3),(2,5)}$"),
        (r"$a=1,b=3;a=2,b=5$", r"$\boxed{(2,5),(1,3)}$"),
        (r"$a=1,b=3;a=2,b=5$", r"$\boxed{(3,1),(5,2)}$"),
    ],
    "numbers": [    ],
    "numbers": [
        ("21034", r"$\boxed{21 {, }034}$"),
        ("12345", r"$\boxed{12,\! 345}$"),
        ("1000000", r"$\boxed{1 000 000}$"),
        ("23", r"$\boxed{2 3}$"),
        (r"$28\%$", r"$\boxed{28 pct}$"),
        ("1.5", r"$\boxed{1,5}$"),
        ("1500", r"$\boxed{1,500}$"),
        (r"$\frac{1}{7}$", r"$\boxed{0.1428}$"),
        (r"$\frac{2}{3}$", r"$\boxed{0.666667}$"),
        (r"$\frac{2}{3}$", r"$\boxed{0.666666}$"),
        (r"$\frac{2}{3}$", r"$\boxed{0.666668}$"),
        ("12", r"$\boxed{\approx 13}$"),
        ("10300", r"$\boxed{10,300}$"),
        (r"$(1, 10) \cup (10, 300)$", r"$\boxed{(1, 10) \cup (10, 300)}$"),
        ("3.75", r"$\boxed{3,75}$"),
        ("0.125", r"$\boxed{0,125}$"),
        ("1234567", r"$\boxed{1,234,567}$"),
        ("1234567", r"$\boxed{1\,234\,567}$"),
        (r"$\frac{1}{7}$", r"$\boxed{0.142857142857}$"),
        (r"$\frac{1}{7}$", r"$\boxed{0.14}$"),
        (r"$\frac{1}{3}$", r"$\boxed{0.333333}$"),
        ("3.14159", r"$\boxed{\pi}$"),
        ("12", r"$\boxed{\approx 12}$"),
        ("0.5", r"$\boxed{.5}$"),
        ("-7", r"$\boxed{-7.0}$"),
        ("1000", r"$\boxed{1{,}000}$"),
        ("2", r"$\boxed{2.0001}$"),
        ("1e3", r"$\boxed{1000}$"),
        ("42", "The answer is 42 dollars."),
        ("42", r"$\boxed{\$42}$"),
        ("5", r"$\boxed{5^{\circ}}$"),
        ("90", r"$\boxed{90^\circ}$"),
    ],
    "sets": [
        (r"$0<f(x)<1$", r"$\boxed{(0,1)}$"),
        (r"$0<f(x)<1$", r"$\boxed{(0,2)}$"),
        (r"$(2, 12) \cup (12, 102)$", r"$\boxed{(2,12) \cup (12,102)}$"),
        (r"$(1, 300)$", r"$\boxed{(1,300)}$"),
        (r"$\{1, 2, 3\}$", r"$\boxed{\{3, 2, 1\}}$"),
        (r"$[1, 2]$", r"$\boxed{[1, 2)}$"),
        (r"$(-\infty, 0)$", r"$\boxed{x < 0}$"),
        (r"$\{1, 2\}$", r"$\boxed{\{2, 1\}}$"),
        (r"$\{1, 2\}$", r"$\boxed{\{1, 3\}}$"),
        (r"$[0, 1)$", r"$\boxed{[0, 1)}$"),
        (r"$[0, 1)$", r"$\boxed{(0, 1)}$"),
        (r"$(-\infty, 2]$", r"$\boxed{(-\infty, 2]}$"),
        (r"$(-\infty, 2]$", r"$\boxed{x \leq 2}$"),
        (r"$[2, 5]$", r"$\boxed{2 \le x \le 5}$"),
        (r"$[-5,-2] \cup [2,5]$", r"$\boxed{2 \le |t| \le 5}$"),
        (r"$(0, \infty)$", r"$\boxed{x > 0}$"),
        (r"$\{3\}$", r"$\boxed{3}$"),
        (r"$(1, 3) \cup (4, 6)$", r"$\boxed{(4, 6) \cup (1, 3)}$"),
        (r"$\emptyset$", r"$\boxed{\varnothing}$"),
        (r"$\mathbb{R}$", r"$\boxed{(-\infty, \infty)}$"),
    ],
    "fractions": [
        (r"$\frac{1}{2}$", r"$\boxed{\frac12}$"),
        (r"$\frac{1}{2}$", r"$\boxed{1/2}$"),
        (r"$\frac{1}{2}$", r"$\boxed{\dfrac{2}{4}}$"),
        (r"$\frac{1}{2}$", r"$\boxed{0.5}$"),
        (r"$\frac{1}{2}$", r"$\boxed{\frac{1}{3}}$"),
        (r"$-\frac{3}{4}$", r"$\boxed{\frac{-3}{4}}$"),
        (r"$-\frac{3}{4}$", r"$\boxed{\frac{3}{-4}}$"),
        (r"$\frac{10}{9}$", "10/9"),
        (r"$2\frac{1}{2}$", r"$\boxed{\frac{5}{2}}$"),
        (r"$\frac{\sqrt{3}}{2}$", r"$\boxed{\frac{\sqrt3}{2}}$"),
        (r"$\frac{1}{\sqrt{2}}$", r"$\boxed{\frac{\sqrt{2}}{2}}$"),
        (r"$\frac{22}{7}$", r"$\boxed{\pi}$"),
    ],
    "percent": [
        (r"$40\%$", r"$\boxed{0.4}$"),
        (r"$40\%$", r"$\boxed{4\%}$"),
        (r"$28\%$", "28 percent"),
        (r"$28\%$", r"$\boxed{28}$"),
        (r"$28\%$", r"$\boxed{0.28}$"),
        (r"$28\%$", r"$\boxed{28\%}$"),
        (r"$28\%$", r"$\boxed{29\%}$"),
        ("0.28", r"$\boxed{28\%}$"),
        ("28", r"$\boxed{28\%}$"),
        (r"$12.5\%$", r"$\boxed{12.5 \%}$"),
        (r"$50\%$", "fifty percent"),
        (r"$5\%$", r"The rate is 5 pct."),
    ],
    "expressions": [
        (r"$\frac{x+1}{2}$", r"$\boxed{\frac{x}{2} + \frac{1}{2}}$"),
        (r"$x^2$", r"$\boxed{2x}$"),
        (r"$2x + 3$", r"$\boxed{3 + 2x}$"),
        (r"$2x + 3$", r"$\boxed{2x - 3}$"),
        (r"$x^2 - 1$", r"$\boxed{(x-1)(x+1)}$"),
        (r"$\sqrt{8}$", r"$\boxed{2\sqrt{2}}$"),
        (r"$\sin^2 x + \cos^2 x$", r"$\boxed{1}$"),
        (r"$e^{i\pi}$", r"$\boxed{-1}$"),
        (r"$\log_2 8$", r"$\boxed{3}$"),
        (r"$\frac{x}{2}$", r"$\boxed{0.5x}$"),
        (r"$3\pi$", r"$\boxed{3 \pi}$"),
        (r"$\binom{5}{2}$", r"$\boxed{10}$"),
        (r"$5!$", r"$\boxed{120}$"),
        (r"$\text{Evelyn}$", r"Therefore, $\boxed{\text{Evelyn}}$ is our answer."),
        (r"$\text{(B)}$", r"$\boxed{B}$"),
        (r"$a^2b$", r"$\boxed{ba^2}$"),
    ],
}

# Where tern's documented policy (docs/rewards.md, "math: against
# math-verify") differs from the peer's verdict: tern's verdict and why. The
# test checks these against the policy, and counts them apart.
POLICY = {
    ("1234567", r"$\boxed{1\,234\,567}$"): (1, "a thin space groups thousands as a comma does"),
    ("3.75", r"$\boxed{3,75}$"): (1, "a comma that cannot group thousands is a decimal comma"),
    ("3.14159", r"$\boxed{\pi}$"): (1, "a decimal gold is a rounded value, and pi rounds to it"),
    ("1e3", r"$\boxed{1000}$"): (1, "1e3 is the number 1000"),
    (r"$(-\infty, 2]$", r"$\boxed{x \leq 2}$"): (1, "an inequality in one variable is its set"),
    (r"$[2, 5]$", r"$\boxed{2 \le x \le 5}$"): (1, "an inequality in one variable is its set"),
    (r"$(0, \infty)$", r"$\boxed{x > 0}$"): (1, "an inequality in one variable is its set"),
    (r"$\emptyset$", r"$\boxed{\varnothing}$"): (1, "both are the empty set"),
    (r"$2x = 6$", r"$\boxed{x = 3}$"): (1, "equations with the same solutions are the same"),
    (r"$3x + 6 = 0$", r"$\boxed{x = -2}$"): (1, "equations with the same solutions are the same"),
    (r"$2x \ge 4$", r"$\boxed{x \ge 2}$"): (1, "inequalities with the same solutions are the same"),
    ("1.5", r"$\boxed{1,5}$"): (1, "a comma that cannot group thousands is a decimal comma"),
    (r"$(-\infty, 0)$", r"$\boxed{x < 0}$"): (1, "an inequality in one variable is its set"),
    ("1000000", r"$\boxed{1 000 000}$"): (1, "spaces group thousands as commas do"),
    (r"$[-5,-2] \cup [2,5]$", r"$\boxed{2 \le |t| \le 5}$"): (1, "bounds on |t| are two intervals"),
}

# Both sides as math-verify's own tests parse them.
TARGETS = [LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()]


def peer(gold, response):
    try:
        return int(bool(verify(parse(gold, TARGETS), parse(response, TARGETS),
                               float_rounding=6, strict=True)))
    except Exception as e:  # a case the peer cannot judge is not a case
        print(f"math-verify failed on {gold!r} / {response!r}: {e}", file=sys.stderr)
        return None


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpora",
                       "math_peer.jsonl")
    n = 0
    with open(out, "w") as f:
        for cls, cases in CASES.items():
            for gold, response in cases:
                v = peer(gold, response)
                if v is None:
                    continue
                case = {"class": cls, "answer": gold, "response": response, "peer": v}
                if (gold, response) in POLICY:
                    case["policy"], case["why"] = POLICY.pop((gold, response))
                f.write(json.dumps(case, ensure_ascii=False) + "\n")
                n += 1
    if POLICY:
        sys.exit(f"policies of no case: {list(POLICY)}")
    print(f"{n} cases, math-verify {version('math-verify')}"
          f" -> {os.path.normpath(out)}")


if __name__ == "__main__":
    main()
